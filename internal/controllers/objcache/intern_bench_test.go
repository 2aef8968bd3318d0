package objcache

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// nodeJSON is a Node as kwok's stages and Stratus leave it in the
// benchmark's clusters: kwok's labels, conditions and node info, the cloud
// labels, addresses and providerID the node controller wrote.
func nodeJSON(i int) []byte {
	name := fmt.Sprintf("node-%05d", i)
	return fmt.Appendf(nil, `{"metadata":{"name":%[1]q,"uid":"6f1c2a54-0000-4000-8000-%012[2]d","resourceVersion":"%[2]d","creationTimestamp":"2026-11-27T19:00:00Z",
"labels":{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","kubernetes.io/hostname":%[1]q,"kubernetes.io/os":"linux","type":"kwok",
"node.kubernetes.io/instance-type":"standard-2","beta.kubernetes.io/instance-type":"standard-2","topology.kubernetes.io/region":"local","topology.kubernetes.io/zone":"locala",
"failure-domain.beta.kubernetes.io/region":"local","failure-domain.beta.kubernetes.io/zone":"locala"},
"annotations":{"kwok.x-k8s.io/node":"fake","node.alpha.kubernetes.io/ttl":"0"}},
"spec":{"providerID":"localcloud://i-%08[2]x","podCIDR":"10.%[3]d.%[4]d.0/24","podCIDRs":["10.%[3]d.%[4]d.0/24"]},
"status":{"capacity":{"cpu":"1k","memory":"1Ti","pods":"1M"},"allocatable":{"cpu":"1k","memory":"1Ti","pods":"1M"},"phase":"Running",
"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-27T19:00:00Z","lastTransitionTime":"2026-11-27T19:00:00Z","reason":"KubeletReady","message":"kubelet is posting ready status"},
{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-11-27T19:00:00Z","lastTransitionTime":"2026-11-27T19:00:00Z","reason":"KubeletHasNoMemoryPressure","message":"kubelet has no MemoryPressure"},
{"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-11-27T19:00:00Z","lastTransitionTime":"2026-11-27T19:00:00Z","reason":"KubeletHasNoDiskPressure","message":"kubelet has no DiskPressure"},
{"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-11-27T19:00:00Z","lastTransitionTime":"2026-11-27T19:00:00Z","reason":"KubeletHasNoPIDPressure","message":"kubelet has no PIDPressure"}],
"addresses":[{"type":"InternalIP","address":"10.0.%[3]d.%[4]d"},{"type":"Hostname","address":%[1]q}],
"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},
"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"kwok-v0.8.0","osImage":"","containerRuntimeVersion":"kwok-v0.8.0","kubeletVersion":"kwok-v0.8.0","kubeProxyVersion":"kwok-v0.8.0","operatingSystem":"linux","architecture":"amd64"}}}`,
		name, i, i/256, i%256)
}

// BenchmarkCachedNodeBytes measures the live heap that 5,000 cached Nodes
// hold through the cache transform, with and without the string table.
//
//	go test -run '^$' -bench CachedNodeBytes -benchtime 1x ./internal/controllers/objcache/
func BenchmarkCachedNodeBytes(b *testing.B) {
	const n = 5000
	for _, intern := range []bool{false, true} {
		b.Run(fmt.Sprintf("intern=%v", intern), func(b *testing.B) {
			for range b.N {
				tr := Transform()
				before := liveHeap()
				nodes := make([]*corev1.Node, n)
				for i := range nodes {
					nd := &corev1.Node{}
					if err := json.Unmarshal(nodeJSON(i), nd); err != nil {
						b.Fatal(err)
					}
					if intern {
						if _, err := tr(nd); err != nil {
							b.Fatal(err)
						}
					} else {
						stripNodeStatus(&nd.Status)
						nd.ManagedFields = nil
					}
					nodes[i] = nd
				}
				after := liveHeap()
				runtime.KeepAlive(nodes)
				b.ReportMetric(float64(after-before)/n, "B/node")
			}
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
