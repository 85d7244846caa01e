module github.com/timerwheel/timerwheel/examples/go

go 1.21

require github.com/timerwheel/timerwheel/bindings/go v0.0.0

replace github.com/timerwheel/timerwheel/bindings/go => ../../bindings/go
