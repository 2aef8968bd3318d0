package realnode

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/netns"
)

// DefaultRoot holds the slots' working directories.
const DefaultRoot = "/var/lib/stratus-realnode"

// maxSlots bounds how many clusters run at once on one machine; each takes
// one /24 of the reserved range.
const maxSlots = 64

// The reserved range is 10.250.0.0/16: slot N is 10.250.N.0/24, the bridge
// .1, node i .10+i, and the upper half, .128/25, the load balancers' VIPs.
const (
	reservedRange = "10.250.0.0/16"
	firstNodeHost = 10
	maxNodes      = 100
	vipPoolHost   = 128
	vipPoolBits   = 25
)

// slot is one cluster's share of the machine: a subnet, a bridge, and
// the prefix of every namespace, link and cgroup it makes.
type slot struct {
	index  int
	dir    string   // working directory: configs, roots, sockets, logs
	lock   *os.File // held (flock) for as long as the slot is in use
	subnet netip.Prefix
	// dualStack: the slot has its IPv6 networks too (ipv6.go).
	dualStack bool
}

// name prefixes the slot's namespaces and cgroups.
func (s *slot) name() string { return "stratus-rn" + strconv.Itoa(s.index) }

// bridge is the slot's bridge on the machine; link names are at most 15
// bytes, hence the short prefix.
func (s *slot) bridge() string { return "strn" + strconv.Itoa(s.index) + "-br" }

// veth is the machine's end of node i's link.
func (s *slot) veth(i int) string { return "strn" + strconv.Itoa(s.index) + "-v" + strconv.Itoa(i) }

func (s *slot) linkPrefix() string { return "strn" + strconv.Itoa(s.index) + "-" }

func (s *slot) gateway() netip.Addr {
	b := s.subnet.Addr().As4()
	b[3] = 1
	return netip.AddrFrom4(b)
}

func (s *slot) nodeAddr(i int) netip.Addr {
	b := s.subnet.Addr().As4()
	b[3] = byte(firstNodeHost + i)
	return netip.AddrFrom4(b)
}

// vipPool is the slot's share of load balancer addresses: local to the
// machine (a route of type local on the bridge, so a cloud binds any of
// them there) and on the nodes' own link, so that pods reach them too.
func (s *slot) vipPool() netip.Prefix {
	b := s.subnet.Addr().As4()
	b[3] = vipPoolHost
	return netip.PrefixFrom(netip.AddrFrom4(b), vipPoolBits)
}

// netnsPath is where `ip netns add` pins a node's namespace.
func (s *slot) netnsName(node string) string { return s.name() + "-" + node }

func netnsPath(name string) string { return netns.Path(name) }

// LockDir holds one lock file per slot, machine-wide whatever the Root
// of each cluster: a slot's subnet and names are the machine's. It is on
// a tmpfs, as everything a slot makes is gone after a reboot. A lock file
// holds its holder's working directory until a clean stop empties it.
const LockDir = "/run/stratus-realnode"

// acquireSlot takes the first free slot whose subnet the machine does not
// use. On the way it cleans every free slot that a killed holder left
// dirty (a non-empty lock file), whichever slot that holder had.
func acquireSlot(ctx context.Context, root string, dualStack bool) (*slot, error) {
	for _, d := range []string{root, LockDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("realnode: %w", err)
		}
	}
	var chosen *slot
	for i := range maxSlots {
		// Past the chosen slot only existing lock files matter: a slot
		// never taken has nothing to clean.
		s, ok, err := tryLock(i, root, chosen == nil)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := s.cleanPrevious(ctx); err != nil {
			s.release()
			if chosen != nil {
				chosen.release()
			}
			return nil, err
		}
		if chosen != nil {
			s.release()
			continue
		}
		// After the cleaning: a killed holder's bridge makes its subnet
		// look used.
		used, err := s.machineUses(dualStack)
		if err != nil {
			s.release()
			return nil, err
		}
		if used {
			s.release()
			continue
		}
		s.dualStack = dualStack
		if err := s.claim(); err != nil {
			s.release()
			return nil, err
		}
		chosen = s
	}
	if chosen == nil {
		return nil, fmt.Errorf("realnode: no free slot in %s (all %d locked or used by the machine)", reservedRange, maxSlots)
	}
	return chosen, nil
}

// machineUses reports whether the machine uses one of the slot's
// networks: its nodes' and clients' IPv4 ones, and with dualStack their
// IPv6 ones.
func (s *slot) machineUses(dualStack bool) (bool, error) {
	used, err := machineNetworks()
	if err != nil {
		return false, err
	}
	if overlaps(s.subnet, used) || overlaps(s.clients(), used) {
		return true, nil
	}
	if !dualStack {
		return false, nil
	}
	used6, err := machineNetworks6()
	if err != nil {
		return false, err
	}
	return overlaps(s.subnet6(), used6) || overlaps(s.clients6(), used6), nil
}

// tryLock locks slot i without waiting; ok is false when another holds it
// (or, without create, when its lock file does not exist).
func tryLock(i int, root string, create bool) (*slot, bool, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(filepath.Join(LockDir, fmt.Sprintf("slot-%d.lock", i)), flags, 0o600)
	if !create && errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("realnode: slot lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("realnode: slot lock: %w", err)
	}
	b := netip.MustParsePrefix(reservedRange).Addr().As4()
	b[2] = byte(i)
	return &slot{index: i, dir: filepath.Join(root, fmt.Sprintf("slot-%d", i)), lock: f,
		subnet: netip.PrefixFrom(netip.AddrFrom4(b), 24)}, true, nil
}

// cleanPrevious removes what the slot's previous holder left, if it did
// not stop cleanly, and marks the slot clean.
func (s *slot) cleanPrevious(ctx context.Context) error {
	prev, err := io.ReadAll(s.lock)
	if err != nil {
		return fmt.Errorf("realnode: slot lock: %w", err)
	}
	if dir := strings.TrimSpace(string(prev)); dir != "" {
		klog.FromContext(ctx).Info("Cleaning a real-node slot left by a killed holder", "slot", s.name(), "dir", dir)
		old := &slot{index: s.index, dir: dir, subnet: s.subnet}
		if err := old.cleanup(ctx); err != nil {
			return err
		}
	}
	return s.markClean()
}

// claim records the slot's working directory in its lock file, for the
// next holder should this one be killed, and cleans that directory.
func (s *slot) claim() error {
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("realnode: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o750); err != nil {
		return fmt.Errorf("realnode: %w", err)
	}
	if err := s.lock.Truncate(0); err != nil {
		return fmt.Errorf("realnode: slot lock: %w", err)
	}
	if _, err := s.lock.WriteAt([]byte(s.dir+"\n"), 0); err != nil {
		return fmt.Errorf("realnode: slot lock: %w", err)
	}
	return nil
}

func (s *slot) markClean() error {
	if err := s.lock.Truncate(0); err != nil {
		return fmt.Errorf("realnode: slot lock: %w", err)
	}
	return nil
}

func (s *slot) release() {
	if s.lock != nil {
		_ = unix.Flock(int(s.lock.Fd()), unix.LOCK_UN)
		_ = s.lock.Close()
		s.lock = nil
	}
}

func overlaps(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Overlaps(p) {
			return true
		}
	}
	return false
}

// machineNetworks returns the IPv4 networks of the machine's addresses and
// of its main routing table, except a default route (which covers
// everything and says nothing about use).
func machineNetworks() ([]netip.Prefix, error) {
	used, err := interfaceNetworks(netip.Addr.Is4)
	if err != nil {
		return nil, err
	}
	routes, err := mainRoutes()
	if err != nil {
		return nil, err
	}
	return append(used, routes...), nil
}

// interfaceNetworks returns the networks of the machine's addresses that
// keep says are of interest.
func interfaceNetworks(keep func(netip.Addr) bool) ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("realnode: machine addresses: %w", err)
	}
	var used []netip.Prefix
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if p, err := netip.ParsePrefix(n.String()); err == nil && keep(p.Addr()) {
				used = append(used, p.Masked())
			}
		}
	}
	return used, nil
}

// mainRoutes parses /proc/net/route: destination and mask in little-endian
// hex.
func mainRoutes() ([]netip.Prefix, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil, fmt.Errorf("realnode: routes: %w", err)
	}
	defer func() { _ = f.Close() }()
	var out []netip.Prefix
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		dst, err1 := hex.DecodeString(fields[1])
		mask, err2 := hex.DecodeString(fields[7])
		if err1 != nil || err2 != nil || len(dst) != 4 || len(mask) != 4 {
			continue
		}
		ones, _ := net.IPv4Mask(mask[3], mask[2], mask[1], mask[0]).Size()
		if ones == 0 {
			continue
		}
		addr := netip.AddrFrom4([4]byte{dst[3], dst[2], dst[1], dst[0]})
		out = append(out, netip.PrefixFrom(addr, ones).Masked())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("realnode: routes: %w", err)
	}
	return out, nil
}
