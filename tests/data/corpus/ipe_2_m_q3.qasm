// iterative phase estimation of the S gate's phase 1/4 (binary 0.01): one auxiliary qubit,
// measured, reset and corrected by the bit it read (OpenQASM 3)
OPENQASM 3.0;
include "stdgates.inc";
qubit[2] q;
bit[2] c;
h q[0];
x q[1];
cp(pi) q[0], q[1];
h q[0];
c[0] = measure q[0];
reset q[0];
h q[0];
if (c[0] == true) {
  p(-pi/2) q[0];
}
cp(pi/2) q[0], q[1];
h q[0];
c[1] = measure q[0];
