module github.com/timerwheel/timerwheel/bindings/go

go 1.21
