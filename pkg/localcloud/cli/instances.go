package cli

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

func sorted(s []string) []string { sort.Strings(s); return s }

var instanceHeader = []string{"ID", "NAME", "STATE", "ZONE", "TYPE", "INTERNAL", "EXTERNAL", "TAGS"}

func instanceRows(items []api.Instance) func() [][]string {
	return func() [][]string {
		rows := make([][]string, 0, len(items))
		for _, i := range items {
			rows = append(rows, []string{i.ID, i.Name, string(i.State), i.Zone, i.Type, i.Addresses.Internal, i.Addresses.External, tagString(i.Tags)})
		}
		return rows
	}
}

func newInstancesCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "instances", Aliases: []string{"instance", "i"}, Short: "Manage instances"}
	cmd.AddCommand(instancesList(g), instancesCreate(g))
	for _, a := range []struct {
		use, short string
		call       instanceFunc
	}{
		{"get", "Show an instance", (*client.Client).GetInstance},
		{"stop", "Stop an instance", (*client.Client).StopInstance},
		{"start", "Start an instance", (*client.Client).StartInstance},
		{"delete", "Terminate an instance", (*client.Client).DeleteInstance},
		{"attach-external-address", "Allocate an external address to an instance", (*client.Client).AttachExternalAddress},
		{"detach-external-address", "Release an instance's external address", (*client.Client).DetachExternalAddress},
	} {
		cmd.AddCommand(instanceAction(g, a.use, a.short, a.call))
	}
	return cmd
}

func instancesList(g *globals) *cobra.Command {
	var name, state string
	var tags []string
	cmd := &cobra.Command{
		Use: "list", Short: "List instances (all pages)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			tm, err := parseTags("tag", tags)
			if err != nil {
				return err
			}
			items, err := c.ListAllInstances(cmd.Context(), client.ListOptions{Name: name, Tags: tm, State: api.InstanceState(state), MaxResults: api.MaxPageSize})
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), api.InstanceList{Items: items}, instanceHeader, instanceRows(items))
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "only the instance with this name")
	cmd.Flags().StringVar(&state, "state", "", "running, stopped or terminated (default: all but terminated)")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "key=value tag filter (repeatable)")
	return cmd
}

func instancesCreate(g *globals) *cobra.Command {
	var req api.CreateInstanceRequest
	var tags []string
	var count int
	cmd := &cobra.Command{
		Use: "create NAME", Short: "Create an instance (or --count N named NAME-0..NAME-N-1 in one call)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if req.Tags, err = parseTags("tag", tags); err != nil {
				return err
			}
			if cluster := os.Getenv(EnvCluster); cluster != "" && req.Tags[api.TagCluster] == "" {
				// In a sandbox, a new instance is one of its machines
				// unless told otherwise: it gets a node.
				if req.Tags == nil {
					req.Tags = map[string]string{}
				}
				req.Tags[api.TagCluster] = cluster
			}
			if count < 1 || count > api.MaxBatchCreate {
				return fmt.Errorf("--count %d: want 1 to %d", count, api.MaxBatchCreate)
			}
			var items []api.Instance
			if count == 1 {
				req.Name = args[0]
				inst, err := c.CreateInstance(cmd.Context(), req)
				if err != nil {
					return err
				}
				items = []api.Instance{*inst}
			} else {
				reqs := make([]api.CreateInstanceRequest, count)
				for i := range reqs {
					reqs[i] = req
					reqs[i].Name = fmt.Sprintf("%s-%d", args[0], i)
				}
				if items, err = c.BatchCreateInstances(cmd.Context(), reqs); err != nil {
					return err
				}
			}
			return g.render(cmd.OutOrStdout(), api.InstanceList{Items: items}, instanceHeader, instanceRows(items))
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Zone, "zone", envOr(EnvZone, "zone-a"), "zone (default $"+EnvZone+", else zone-a)")
	f.StringVar(&req.Region, "region", envOr(EnvRegion, "region-1"), "region (default $"+EnvRegion+", else region-1)")
	f.StringArrayVar(&tags, "tag", nil, "key=value tag (repeatable); with $"+EnvCluster+" set, "+api.TagCluster+"=$"+EnvCluster+" is added unless given")
	f.StringVar(&req.Type, "type", "standard", "instance type")
	f.BoolVar(&req.External, "external", false, "also allocate an external address")
	f.IntVar(&count, "count", 1, "number of instances to create in one call")
	return cmd
}

// instanceFunc is a client call on one instance, as a method expression
// such as (*client.Client).StopInstance.
type instanceFunc func(*client.Client, context.Context, string) (*api.Instance, error)

func instanceAction(g *globals, use, short string, call instanceFunc) *cobra.Command {
	return &cobra.Command{
		Use: use + " ID|NAME", Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			id, err := resolveInstance(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			inst, err := call(c, cmd.Context(), id)
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), inst, instanceHeader, instanceRows([]api.Instance{*inst}))
		},
	}
}

// resolveInstance accepts an instance id or the name of a live instance
// (node names are instance names in the sandbox).
func resolveInstance(ctx context.Context, c *client.Client, arg string) (string, error) {
	if api.ValidID("id", "i", arg) == nil {
		return arg, nil
	}
	items, err := c.ListAllInstances(ctx, client.ListOptions{Name: arg})
	if err != nil {
		return "", err
	}
	if len(items) == 0 {
		return "", fmt.Errorf("%q: no instance with this id or name", arg)
	}
	return items[0].ID, nil
}
