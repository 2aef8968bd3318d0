package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

var lbHeader = []string{"ID", "NAME", "CLUSTER", "STATUS", "VIP", "LISTENERS", "BACKENDS"}

func lbRows(items []api.LoadBalancer) func() [][]string {
	return func() [][]string {
		rows := make([][]string, 0, len(items))
		for _, lb := range items {
			var ls []string
			targets := strconv.Itoa(len(lb.Backends))
			for _, l := range lb.Listeners {
				ls = append(ls, fmt.Sprintf("%s:%d->%d", l.Protocol, l.Port, l.NodePort))
			}
			if lb.EndpointTargets() {
				// Each listener has endpoints of its own: the row shows how
				// many, the JSON output which.
				ls = ls[:0]
				for _, l := range lb.Listeners {
					ls = append(ls, fmt.Sprintf("%s:%d->%d endpoints", l.Protocol, l.Port, len(l.Endpoints)))
				}
				targets = "endpoints"
			}
			status := string(lb.Status)
			if lb.StatusMessage != "" {
				status += " (" + lb.StatusMessage + ")"
			}
			// The VIP column lists both of a dual-stack load balancer's.
			vips := strings.Join(slices.DeleteFunc([]string{lb.VIP, lb.VIP6}, func(v string) bool { return v == "" }), ",")
			rows = append(rows, []string{lb.ID, lb.Name, lb.Cluster, status, vips, strings.Join(ls, ","), targets})
		}
		return rows
	}
}

func newLBsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "lbs", Aliases: []string{"lb", "loadbalancers"}, Short: "Manage load balancers"}
	var cluster string
	list := &cobra.Command{
		Use: "list", Short: "List load balancers", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			items, err := c.ListAllLoadBalancers(cmd.Context(), client.ListOptions{Cluster: cluster, MaxResults: api.MaxPageSize})
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), api.LoadBalancerList{Items: items}, lbHeader, lbRows(items))
		},
	}
	list.Flags().StringVar(&cluster, "cluster", "", "only this cluster's load balancers")
	cmd.AddCommand(list, lbsCreate(g), lbAction(g, "get"), lbAction(g, "delete"))
	return cmd
}

func lbsCreate(g *globals) *cobra.Command {
	var req api.CreateLoadBalancerRequest
	var listeners []string
	cmd := &cobra.Command{
		Use: "create NAME", Short: "Create a load balancer", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			req.Name = args[0]
			for _, l := range listeners {
				parsed, err := parseListener(l)
				if err != nil {
					return err
				}
				req.Listeners = append(req.Listeners, parsed)
			}
			lb, err := c.CreateLoadBalancer(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), lb, lbHeader, lbRows([]api.LoadBalancer{*lb}))
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Cluster, "cluster", "kubernetes", "owning cluster")
	f.StringArrayVar(&listeners, "listener", nil, "PROTOCOL:PORT:NODEPORT, e.g. TCP:80:30080 (repeatable)")
	f.StringArrayVar(&req.Backends, "backend", nil, "backend instance id (repeatable)")
	f.StringArrayVar(&req.SourceRanges, "source-range", nil, "allowed source CIDR (repeatable)")
	return cmd
}

func parseListener(s string) (api.Listener, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return api.Listener{}, fmt.Errorf("--listener %q: want PROTOCOL:PORT:NODEPORT", s)
	}
	port, err1 := strconv.Atoi(parts[1])
	node, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		return api.Listener{}, fmt.Errorf("--listener %q: ports must be numbers", s)
	}
	return api.Listener{Protocol: api.Protocol(strings.ToUpper(parts[0])), Port: port, NodePort: node}, nil
}

func lbAction(g *globals, use string) *cobra.Command {
	return &cobra.Command{
		Use: use + " ID", Short: use + " a load balancer", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var lb *api.LoadBalancer
			if use == "get" {
				lb, err = c.GetLoadBalancer(cmd.Context(), args[0])
			} else {
				lb, err = c.DeleteLoadBalancer(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), lb, lbHeader, lbRows([]api.LoadBalancer{*lb}))
		},
	}
}
