import { ErrorCode } from '../../../../platform/contracts/errors.js';
import { GraphQLError } from 'graphql';
import type { Db } from 'mongodb';
import type { GraphClient } from '../../../../platform/contracts/graph.js';
import { busDispatcher, CarriedInPart, graphForwarder, type Dispatcher } from '../../../../platform/messaging/outbox.js';
import type { EventBus } from '../../../../platform/messaging/event-bus.js';
import type { OutboxEvent } from '../../../../platform/contracts/events.js';
import type { Deliveries } from '../../../../platform/messaging/deliveries.js';
import type { CardMessageDocument } from './datasource.js';
import { releaseHolds } from './funds.js';
import { webhookConfigsCollection } from '../webhooks/datasource.js';

const RECORD = `mutation ($input: [CardTransactionInput!]!) { recordCardTransactions(input: $input) { recorded alreadyRecorded } }`;

/**
 * Carries decided messages to all that follows from them, in one lane with one mark per message
 * (marking rewrites the document, the dearest part of carrying on the embedded database): to the
 * event bus (subscriptions), into the delivery log (advice webhooks), and to payments (the
 * transactions of a batch in one call, and the holds its reversals of authorizations release). Each receiver drops repeats by id, so a batch carried
 * again after a failure changes nothing twice.
 */
export function decisionFollowers(bus: EventBus, graph: GraphClient, db: Db, deliveries: Deliveries): Dispatcher {
  const toBus = busDispatcher(bus);
  const toPayments = graphForwarder({
    name: 'card transactions to payments',
    types: ['card.authorization'],
    batch: 100,
    graph,
    mutation: RECORD,
    variablesOf: (events) => ({
      input: events.flatMap((event) =>
        event.payload.transaction ? [{ messageId: event.payload.messageId, ...event.payload.transaction }] : [],
      ),
    }),
  });
  return {
    name: 'card decisions',
    mark: 'dtsPublished',
    batch: 100,
    eager: false,
    async send(events: OutboxEvent[]) {
      const messages = events as CardMessageDocument[];
      // The three go at once; if any fails, the whole batch goes again (published in part included).
      await Promise.all([
        toBus.send(events).catch((error: unknown) => {
          throw error instanceof CarriedInPart ? error.cause : error;
        }),
        enqueueAdvices(db, deliveries, messages),
        messages.some((message) => message.payload.transaction) ? toPayments.send(events) : null,
        releaseHolds(
          graph,
          messages.flatMap((message) => (message.payload.releasesHold ? [message.payload.releasesHold] : [])),
        ),
      ]);
    },
    // Parked only for what payments refuses in the message itself; a gateway or payments that does
    // not know the mutation yet (a rolling upgrade) is away, and the batch waits for it.
    refuses: (error) => error instanceof GraphQLError && error.extensions.code === ErrorCode.VALIDATION_FAILED,
  };
}

/** Enqueues the advice webhook of each decided advice once (by its delivery id): delivered at least once, on the retry schedule. */
async function enqueueAdvices(db: Db, deliveries: Deliveries, messages: readonly CardMessageDocument[]): Promise<void> {
  const advices = messages.filter((message) => message.advice && message.svcAggregatorId);
  if (advices.length === 0) return;
  const aggregators = [...new Set(advices.map((message) => message.svcAggregatorId!))];
  const configs = new Map(
    (
      await webhookConfigsCollection(db)
        .find({ _id: { $in: aggregators } })
        .toArray()
    ).map((config) => [config._id, config]),
  );
  await Promise.all(
    advices.map(async (message) => {
      const config = configs.get(message.svcAggregatorId!);
      if (!config) return;
      await deliveries.enqueue(
        {
          _id: `dlv_${message._id}_advice`,
          kind: 'webhook',
          svcMerchantId: null,
          svcAggregatorId: config._id,
          eventType: 'card_authorization.advice',
          to: config.url,
          payload: message.advice!,
        },
        { wait: false },
      );
    }),
  );
}
