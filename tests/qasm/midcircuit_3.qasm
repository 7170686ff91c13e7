// a measurement in the middle: qubit 0 is measured, then used again
OPENQASM 3.0;
include "stdgates.inc";
qubit[3] q;
bit[3] c;
h q[0];
cx q[0], q[1];
c[0] = measure q[0];
h q[0];
cx q[1], q[2];
c[1] = measure q[1];
c[2] = measure q[2];
