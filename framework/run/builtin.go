package run

// The built-in plugins: importing a package registers its qdisc or driver.
import (
	_ "github.com/txlab/txlab/drivers/i40e"
	_ "github.com/txlab/txlab/drivers/ice"
	_ "github.com/txlab/txlab/drivers/idpf"
	_ "github.com/txlab/txlab/drivers/veth"
	_ "github.com/txlab/txlab/plugins/cake"
	_ "github.com/txlab/txlab/plugins/fq"
	_ "github.com/txlab/txlab/plugins/fq_codel"
	_ "github.com/txlab/txlab/plugins/sfq"
)
