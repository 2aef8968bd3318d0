// Package dataplane is localcloud's L4 data plane: for each active load
// balancer it binds VIP:port on loopback for every listener and forwards
// TCP connections and UDP flows to the healthy backends' address:nodePort.
//
// Why it is built this way:
//   - The set of backends a new connection may use is an immutable snapshot
//     swapped atomically, so an update never touches established TCP
//     connections: they keep their backend until either side closes.
//   - Health is tracked per backend id and survives updates, so changing the
//     listeners does not reset a backend to healthy.
//   - Source ranges are checked per connection / per datagram; a refused TCP
//     connection is closed before any byte is forwarded.
//   - UDP has no connections, so each client address gets its own flow (an
//     upstream socket to one backend) that ends after an idle timeout.
package dataplane
