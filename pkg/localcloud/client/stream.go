package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// EachLoadBalancer calls fn with every load balancer the listing returns,
// page after page, each decoded as it arrives. A caller that keeps only
// what it needs (names, tags, a shared copy of the backends) never holds
// the listing whole: with thousands of nodes, every load balancer carries
// thousands of backends, and a page of them is tens of megabytes of JSON.
// Each instance id is decoded once per listing and load balancers with the
// same backends share one Backends slice (see idTable): fn must not modify
// it. An error from fn ends the listing and is returned.
func (c *Client) EachLoadBalancer(ctx context.Context, opts ListOptions, fn func(*api.LoadBalancer) error) error {
	ids := newIDTable()
	for {
		page := &lbPage{each: fn, ids: ids}
		if err := c.do(ctx, http.MethodGet, "/loadbalancers", opts.values(), nil, page); err != nil {
			return fmt.Errorf("localcloud: list load balancers: %w", err)
		}
		if page.next == "" {
			return nil
		}
		opts.PageToken = page.next
	}
}

// lbPage decodes one page of api.LoadBalancerList, handing each item to
// each as soon as it is decoded.
type lbPage struct {
	each func(*api.LoadBalancer) error
	ids  *idTable
	next string
}

// lbItem decodes one load balancer; its Backends field, shallower than
// the embedded spec's, takes the "backends" key.
type lbItem struct {
	api.LoadBalancer
	Backends backendIDs `json:"backends"`
}

func (p *lbPage) decodeStream(dec *json.Decoder) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case "items":
			if err := p.items(dec); err != nil {
				return err
			}
		case "nextPageToken":
			if err := dec.Decode(&p.next); err != nil {
				return fmt.Errorf("nextPageToken: %w", err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	return expectDelim(dec, '}')
}

func (p *lbPage) items(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // "items": null
		return nil
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("items: got %v, want an array", tok)
	}
	for i := 0; dec.More(); i++ {
		item := lbItem{Backends: backendIDs{table: p.ids}}
		if err := dec.Decode(&item); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
		lb := item.LoadBalancer
		lb.Backends = item.Backends.ids
		if err := p.each(&lb); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("got %v, want %v", tok, want)
	}
	return nil
}
