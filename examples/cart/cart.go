package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
)

// CartType is the cart actor's type name.
const CartType = "cart"

// Cart is a cart actor's state, stored as JSON.
type Cart struct {
	Items    map[string]Line `json:"items"`
	Status   string          `json:"status"` // open, charging, paid
	ChargeID string          `json:"charge_id,omitempty"`
}

// Line is one product in a cart.
type Line struct {
	Name  string `json:"name"`
	Cents int    `json:"cents"`
	Qty   int    `json:"qty"`
}

// AddArgs adds qty of a product.
type AddArgs struct {
	SKU   string `json:"sku"`
	Name  string `json:"name"`
	Cents int    `json:"cents"`
	Qty   int    `json:"qty"`
}

// chargeArgs is what the charge effect is asked to take.
type chargeArgs struct {
	Cents int `json:"cents"`
}

// chargeOutcome is delivered back by the runtime when the charge succeeded.
type chargeOutcome struct {
	EffectID string          `json:"effect_id"`
	Result   json.RawMessage `json:"result"`
}

func (c *Cart) total() (count, cents int) {
	for _, l := range c.Items {
		count += l.Qty
		cents += l.Qty * l.Cents
	}
	return count, cents
}

// cartType defines the cart: add and remove items while open, checkout
// stages the charge as an effect (it runs after the commit, outside any
// transaction, retried until it succeeds), and "charged" records its
// outcome.
func cartType() *actor.Type[Cart] {
	open := func(s *Cart) error {
		if s.Status != "" && s.Status != "open" {
			return actor.Permanent(fmt.Errorf("the cart is %s", s.Status))
		}
		return nil
	}
	return &actor.Type[Cart]{
		Name:    CartType,
		Initial: func() Cart { return Cart{Items: map[string]Line{}, Status: "open"} },
		Messages: map[string]actor.Handler[Cart]{
			"add": actor.Message(func(c *actor.Context, s *Cart, a AddArgs) (any, error) {
				if err := open(s); err != nil {
					return nil, err
				}
				if a.SKU == "" || a.Qty < 1 || a.Cents < 0 {
					return nil, actor.Permanent(errors.New("add needs a sku, a qty of 1 or more and a price"))
				}
				l := s.Items[a.SKU]
				l.Name, l.Cents, l.Qty = a.Name, a.Cents, l.Qty+a.Qty
				s.Items[a.SKU] = l
				return nil, nil
			}),
			"remove": actor.Message(func(c *actor.Context, s *Cart, sku string) (any, error) {
				if err := open(s); err != nil {
					return nil, err
				}
				delete(s.Items, sku)
				return nil, nil
			}),
			"checkout": actor.Message(func(c *actor.Context, s *Cart, _ struct{}) (int, error) {
				if err := open(s); err != nil {
					return 0, err
				}
				_, cents := s.total()
				if cents == 0 {
					return 0, actor.Permanent(errors.New("the cart is empty"))
				}
				s.Status = "charging"
				return cents, c.Emit("charge", chargeArgs{Cents: cents}, actor.OnSuccess("charged"))
			}),
			"charged": actor.Message(func(c *actor.Context, s *Cart, o chargeOutcome) (any, error) {
				var id string
				_ = json.Unmarshal(o.Result, &id)
				s.Status, s.ChargeID = "paid", id
				return nil, nil
			}),
			"view": actor.Query(func(c *actor.Context, s *Cart, _ struct{}) (Cart, error) { return *s, nil }),
		},
		Observables: map[string]func(*Cart) any{
			"count":  func(s *Cart) any { n, _ := s.total(); return n },
			"total":  func(s *Cart) any { _, cents := s.total(); return fmt.Sprintf("%d.%02d", cents/100, cents%100) },
			"status": func(s *Cart) any { return s.Status },
			"items": func(s *Cart) any {
				type item struct {
					SKU   string `json:"sku"`
					Name  string `json:"name"`
					Qty   int    `json:"qty"`
					Cents int    `json:"cents"`
				}
				out := []item{}
				for sku, l := range s.Items {
					out = append(out, item{sku, l.Name, l.Qty, l.Cents})
				}
				sort.Slice(out, func(i, j int) bool { return out[i].SKU < out[j].SKU })
				return out
			},
		},
	}
}

// payments is a stand-in card processor that is idempotent the way a real
// one is with an idempotency key: charging again with the same key (the
// effect's stable ID, the same on every retry) returns the first charge
// instead of taking the money twice.
type payments struct {
	mu      sync.Mutex
	charges map[string]string // idempotency key -> charge ID
	taken   int               // cents actually charged
}

func (p *payments) charge(ctx context.Context, ec host.EffectContext, raw json.RawMessage) (any, error) {
	var a chargeArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.charges[ec.ID]; ok {
		return id, nil
	}
	id := fmt.Sprintf("ch_%d", len(p.charges)+1)
	p.charges[ec.ID] = id
	p.taken += a.Cents
	return id, nil
}
