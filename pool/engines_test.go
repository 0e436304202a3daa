package pool_test

import (
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/gnettcp"
)

// The tests of Pools and Dialers in package pool run on gnet's engine too:
// a test of package pool cannot import gnettcp, which imports pool, but
// this file, of the same test binary, can.
func init() { *pool.TestEngines = append(*pool.TestEngines, gnettcp.Engine) }
