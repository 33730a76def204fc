package drivertest

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
)

// Init runs d.Init(s, args) for a table-driven options test: with
// wantErr set it wants an error containing it and returns false; else
// it wants none and returns the driver's Info and true.
func Init(t *testing.T, d driver.Driver, s driver.Setup, args []string, wantErr string) (driver.Info, bool) {
	t.Helper()
	info, err := d.Init(s, args)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want %q", err, wantErr)
		}
		return info, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return info, true
}
