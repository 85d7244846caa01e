//go:build timerwheel_system

package timerwheel

// With -tags timerwheel_system the package builds against an installed libtimerwheel (make
// install from the repository, or a distribution's package) found through pkg-config,
// instead of the prebuilt library inside the module. Programs then link libtimerwheel.so.

// #cgo pkg-config: timerwheel
import "C"
