package cli

import (
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

var routeHeader = []string{"NAME", "DESTINATION", "INSTANCE", "INSTANCE-NAME", "STATE"}

func routeRows(items []api.Route) func() [][]string {
	return func() [][]string {
		rows := make([][]string, 0, len(items))
		for _, r := range items {
			rows = append(rows, []string{r.Name, r.DestinationCIDR, r.InstanceID, r.InstanceName, string(r.State)})
		}
		return rows
	}
}

func newRoutesCommand(g *globals) *cobra.Command {
	var cluster string
	cmd := &cobra.Command{Use: "routes", Aliases: []string{"route"}, Short: "Manage a cluster's route table"}
	cmd.PersistentFlags().StringVar(&cluster, "cluster", envOr(EnvCluster, "kubernetes"), "cluster whose route table to use (default $"+EnvCluster+", else kubernetes)")
	list := &cobra.Command{
		Use: "list", Short: "List routes", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			items, err := c.ListRoutes(cmd.Context(), cluster)
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), api.RouteList{Items: items}, routeHeader, routeRows(items))
		},
	}
	var req api.CreateRouteRequest
	create := &cobra.Command{
		Use: "create NAME", Short: "Route a CIDR to an instance", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			req.Name = args[0]
			r, err := c.CreateRoute(cmd.Context(), cluster, req)
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), r, routeHeader, routeRows([]api.Route{*r}))
		},
	}
	create.Flags().StringVar(&req.DestinationCIDR, "cidr", "", "destination CIDR")
	create.Flags().StringVar(&req.InstanceID, "instance", "", "target instance id")
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a route", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return c.DeleteRoute(cmd.Context(), cluster, args[0])
		},
	}
	cmd.AddCommand(list, create, del)
	return cmd
}

func newStatsCommand(g *globals) *cobra.Command {
	var reset bool
	cmd := &cobra.Command{
		Use: "stats", Short: "Show (or --reset) the per-operation request counters", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if reset {
				return c.ResetStats(cmd.Context())
			}
			s, err := c.Stats(cmd.Context())
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), s, []string{"OPERATION", "TOTAL", "BY-CODE"}, func() [][]string {
				var rows [][]string
				for op, st := range s.Operations {
					var codes []string
					for code, n := range st.ByCode {
						codes = append(codes, code+"="+strconv.FormatInt(n, 10))
					}
					sort.Strings(codes)
					rows = append(rows, []string{op, strconv.FormatInt(st.Total, 10), strings.Join(codes, ",")})
				}
				sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
				return rows
			})
		},
	}
	cmd.Flags().BoolVar(&reset, "reset", false, "zero the counters")
	return cmd
}
