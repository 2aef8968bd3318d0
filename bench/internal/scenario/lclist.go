package scenario

import (
	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// lcList lists the benchmark cluster's load balancers, a page as large as
// the API allows so that one poll is one request.
func lcList() lcclient.ListOptions {
	return lcclient.ListOptions{Cluster: harness.ClusterName, MaxResults: api.MaxPageSize}
}
