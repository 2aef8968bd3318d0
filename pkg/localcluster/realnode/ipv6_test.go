package realnode

import (
	"net/netip"
	"strings"
	"testing"
)

// A slot's IPv6 addresses follow its index, inside the reserved /48s, and
// never meet another slot's.
func TestSlotIPv6Addresses(t *testing.T) {
	s := &slot{index: 3, dualStack: true}
	for got, want := range map[string]string{
		s.subnet6().String():       "fd00:5354:0:3::/64",
		s.clients6().String():      "fd00:5354:1:3::/64",
		s.gateway6().String():      "fd00:5354:0:3::1",
		s.lbAddr6().String():       "fd00:5354:0:3::2",
		s.nodeAddr6(0).String():    "fd00:5354:0:3::10",
		s.nodeAddr6(99).String():   "fd00:5354:0:3::73",
		s.vipPool6().String():      "fd00:5354:0:3::8000/113",
		s.clientAddr6().String():   "fd00:5354:1:3::1",
		s.clientNSAddr6().String(): "fd00:5354:1:3::2",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	if !s.subnet6().Contains(s.nodeAddr6(maxNodes-1)) || s.vipPool6().Contains(s.nodeAddr6(maxNodes-1)) {
		t.Error("the last node's address is outside the subnet or inside the VIP range")
	}
	other := &slot{index: 4}
	if other.subnet6().Overlaps(s.subnet6()) || other.clients6().Overlaps(s.clients6()) || s.subnet6().Overlaps(s.clients6()) {
		t.Error("two slots' IPv6 networks overlap")
	}
	if !netip.MustParsePrefix(reservedRange6).Contains(s.subnet6().Addr()) || !netip.MustParsePrefix(clientsRange6).Contains(s.clients6().Addr()) {
		t.Error("a slot's IPv6 network is outside its reserved range")
	}
	if !strings.Contains(strings.Join(s.nodeSteps6("ns", 0, true, "nft")[0], " "), "nodad") {
		t.Error("a node's IPv6 address is added with duplicate address detection")
	}
}

// /proc/net/ipv6_route lines: the machine's networks, without default,
// link-local, multicast and loopback routes.
func TestParseIPv6Route(t *testing.T) {
	for line, want := range map[string]string{
		"fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0": "fd00::/64",
		"fd005354000000030000000000008000 71 00000000000000000000000000000000 00 fd005354000100030000000000000002 00000400 00000001 00000000 00000003 strn3-cl": "fd00:5354:0:3::8000/113",
		"00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0": "",
		"fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0": "",
		"ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000004 00000000 00000001     eth0": "",
		"00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000004 00000000 80200001       lo": "",
		"garbage": "",
	} {
		p, ok := parseIPv6Route(line)
		if got := ""; ok {
			got = p.String()
			if got != want {
				t.Errorf("%q: %s, want %s", line, got, want)
			}
		} else if want != "" {
			t.Errorf("%q: not parsed, want %s", line, want)
		}
	}
	if _, err := machineNetworks6(); err != nil {
		t.Fatal(err)
	}
}
