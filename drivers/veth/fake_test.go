package veth

import "github.com/txlab/txlab/framework/driver/drivertest"

// fakeCtx is the shared fake host (framework/driver/drivertest).
type fakeCtx = drivertest.Ctx

var newFake = drivertest.New
