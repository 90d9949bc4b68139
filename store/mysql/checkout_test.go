package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"allot/bench/cart/carttest"
	"allot/store"
	"allot/store/mysql"
	"allot/store/storetest"
)

func TestCheckoutConformance(t *testing.T) {
	storetest.RunCheckout(t, func(t *testing.T) store.Store { return open(t, mysql.InnoDB, store.DurabilityWrite) })
}

func TestCheckoutBench(t *testing.T) {
	carttest.RunOnStore(t, func(t *testing.T) store.Store { return open(t, mysql.InnoDB, store.DurabilityWrite) })
}

func TestCheckoutRefusedOnMyISAM(t *testing.T) {
	st := open(t, mysql.MyISAM, store.DurabilityWrite)
	defer st.Close()
	if _, err := st.PrepareCheckout(context.Background(), store.CheckoutConfig{}); err == nil {
		t.Fatal("MyISAM accepted checkout")
	}
	se, err := st.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	var res store.HoldResult
	err = se.(store.Checkouter).Hold(context.Background(), "h", time.Second, []store.CartLine{{N: 1}}, &res)
	if err == nil || !strings.Contains(err.Error(), "MyISAM") {
		t.Fatalf("a MyISAM session held: %v", err)
	}
}
