// Package lib holds what the timerwheel package links by default: timerwheel.h, a copy of
// the repository's include/timerwheel.h, and a prebuilt static libtimerwheel.a per platform
// in <GOOS>_<GOARCH>/. `make go-lib` writes both from the sources; `make check-go-lib` fails
// when they no longer match the header. It has no Go code.
package lib
