from llqm_core import hookimpl
