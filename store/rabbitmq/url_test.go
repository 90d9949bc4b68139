package rabbitmq

import "testing"

func TestAMQPURL(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"", URLDefault},
		{"10.0.0.7:5673", "amqp://guest:guest@10.0.0.7:5673/"},
		{"amqps://u:p@host:5671/vh", "amqps://u:p@host:5671/vh"},
	} {
		if got := amqpURL(c.addr); got != c.want {
			t.Errorf("amqpURL(%q) = %q, want %q", c.addr, got, c.want)
		}
	}
}
