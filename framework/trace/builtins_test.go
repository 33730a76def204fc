package trace_test

import _ "github.com/txlab/txlab/drivers/ice" // the driver the tests run
