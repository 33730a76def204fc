package veth

import "github.com/txlab/txlab/framework/driver/drivertest"

var newFake = drivertest.New
