//go:build !cgo

package timerwheel

// The package calls the C library through cgo: it needs CGO_ENABLED=1 and a C compiler
// (cgo is off by default when cross-compiling).
var _ = timerwheel_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler
