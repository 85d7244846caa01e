//go:build cgo && !timerwheel_system && !(linux && amd64)

package timerwheel

// The module carries a prebuilt libtimerwheel for linux/amd64 only (add a platform with
// `make go-lib` on it, and its GOOS/GOARCH to the constraint above). Elsewhere the build
// stops here, with the way out in the name of the missing identifier.
var _ = no_prebuilt_libtimerwheel_for_this_GOOS_GOARCH__install_the_C_library_and_build_with_tags_timerwheel_system
