//go:build !timerwheel_system

package timerwheel

// By default the package builds against the header and the prebuilt static library inside
// the module (internal/lib), so `go get` is all a program needs: no Rust toolchain, no
// installed library. The build_prebuilt_<GOOS>_<GOARCH>.go files, written by `make go-lib`,
// link the archive of each platform that has one.

// #cgo CFLAGS: -I${SRCDIR}/internal/lib
import "C"

// The directories of the header and the archives, imported so that `go mod vendor` keeps them.
import _ "github.com/timerwheel/timerwheel/bindings/go/internal/lib"
