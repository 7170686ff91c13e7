// W state on 5 qubits, no measurements (the executor measures)
OPENQASM 2.0;
include "qelib1.inc";
qreg q[5];
x q[0];
cry(2.214297435588181) q[0],q[1];
cx q[1],q[0];
cry(2*pi/3) q[1],q[2];
cx q[2],q[1];
cry(1.9106332362490186) q[2],q[3];
cx q[3],q[2];
cry(pi/2) q[3],q[4];
cx q[4],q[3];