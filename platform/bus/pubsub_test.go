package bus

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/stretchr/testify/require"
)

// TestUniversalPubSub runs watermill's shared pub/sub suite against the
// embedded broker, with a persisted data dir as in the single-machine
// deployment. Topics have one partition, so order is global: with more
// partitions, order holds per key (see TestOrderPerKeyAcrossPartitions).
//
// The plain constructor gives every Subscriber its own consumer group, the
// way every projection has its own group: a new one replays the whole log
// (NewSubscriberReceivesOldMessages). TestConsumerGroups gets shared groups.
//
// The suite runs its full sizes (up to 10000 messages, 50 subscribers);
// `go test -short` selects its small ones. TestReconnect is skipped by the
// suite (it needs a RestartServiceCommand); TestPublishFailsWhileBrokerDown
// and TestSubscriberResumesAfterBrokerRestart cover reconnects instead.
func TestUniversalPubSub(t *testing.T) {
	b := startBroker(t, EmbeddedConfig{DataDir: t.TempDir()})
	tests.TestPubSub(t, tests.Features{
		ConsumerGroups:                   true,
		ExactlyOnceDelivery:              false,
		GuaranteedOrder:                  true,
		Persistent:                       true,
		NewSubscriberReceivesOldMessages: true,
	}, func(t *testing.T) (message.Publisher, message.Subscriber) {
		return newPubSub(t, b.Addrs(), uniqueName("g"))
	}, func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		return newPubSub(t, b.Addrs(), group)
	})
}

// TestSuiteSharedGroup reruns the suite's resume tests with one consumer
// group per test, so that each new Subscriber continues from the offsets its
// predecessors committed instead of replaying from the start.
func TestSuiteSharedGroup(t *testing.T) {
	b := startBroker(t, EmbeddedConfig{DataDir: t.TempDir()})
	features := tests.Features{
		ConsumerGroups: true, GuaranteedOrder: true, Persistent: true,
	}
	for name, fn := range map[string]func(*testing.T, tests.TestContext, tests.PubSubConstructor){
		"ContinueAfterSubscribeClose": tests.TestContinueAfterSubscribeClose,
		"ContinueAfterErrors":         tests.TestContinueAfterErrors,
		"ResendOnError":               tests.TestResendOnError,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			group := uniqueName("shared")
			fn(t, tests.TestContext{TestID: tests.NewTestID(), Features: features},
				func(t *testing.T) (message.Publisher, message.Subscriber) {
					return newPubSub(t, b.Addrs(), group)
				})
		})
	}
}

func newPubSub(t *testing.T, brokers []string, group string) (message.Publisher, message.Subscriber) {
	cfg := testConfig(brokers, group, 1)
	pub, err := NewPublisher(cfg, testLogger())
	require.NoError(t, err)
	sub, err := NewSubscriber(cfg, testLogger())
	require.NoError(t, err)
	return pub, sub
}
