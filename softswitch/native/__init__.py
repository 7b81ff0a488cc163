"""softswitch's native runtime: switch state, the v1model pipeline and port I/O in C, for programs
whose blocks the C back end generates. See softswitch/native/README.md for the contract with the
generated code, and softswitch.native.switch.NativeSwitch for the Python control API."""
