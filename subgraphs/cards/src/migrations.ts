import type { Db } from 'mongodb';
import { convertOnce, type Migration, type MigrationLog, type StoredDocument } from '../../../platform/mongo/migrations.js';
import { legacyAmounts } from '../../../platform/money/legacy.js';
import { cardMessagesCollection } from './authorization/datasource.js';

const MONEY_ID = 'cards-money-in-minor-units';

/** Card messages stored their amount as a float in the currency's units; it is an integer of its minor units now. */
const MONEY_IN_MINOR_UNITS: Migration = {
  id: MONEY_ID,
  async run(db: Db, log: MigrationLog) {
    const messages = cardMessagesCollection(db);
    // A claim still pending belongs to a process that stopped before it decided; without it, the
    // network's retransmission is decided afresh instead of being compared with an old-unit amount.
    await messages.deleteMany({ state: 'pending' as never });
    await convertOnce(db, messages.collectionName, MONEY_ID, (doc) =>
      legacyAmounts(log, { migration: MONEY_ID, collection: messages.collectionName }, doc, ['amount'], doc.currency),
    );
  },
};

const EVENTS_ID = 'cards-messages-are-events';

/**
 * A decided message is now also its `card.authorization` event, and a crediting reversal is bound
 * to its original by a unique `bindingKey`. Messages stored before were published from the outbox
 * then: they are marked carried, and reversals that credited take their original's binding.
 */
const MESSAGES_ARE_EVENTS: Migration = {
  id: EVENTS_ID,
  async run(db: Db) {
    const messages = cardMessagesCollection(db);
    // Claims a process left pending since the money migration: never decided, so never answered.
    await messages.deleteMany({ state: 'pending' as never });
    const reversalOf = new Map<string, string>();
    for await (const original of db
      .collection<StoredDocument>(messages.collectionName)
      .find({ reversedBy: { $nin: [null] } }, { projection: { reversedBy: 1 } })) {
      if (typeof original.reversedBy === 'string') reversalOf.set(original.reversedBy, original._id);
    }
    await convertOnce(db, messages.collectionName, EVENTS_ID, (doc) => {
      const reverses = reversalOf.get(doc._id) ?? null;
      const decided = doc.dtsReceived instanceof Date ? doc.dtsReceived : new Date(0);
      return {
        bindingKey: reverses ? `reverses:${reverses}` : doc._id,
        reverses,
        advice: null,
        type: 'card.authorization',
        audience: {
          ...(typeof doc.SvcUserId === 'string' ? { SvcUserId: doc.SvcUserId } : {}),
          ...(typeof doc.svcAggregatorId === 'string' ? { svcAggregatorId: doc.svcAggregatorId } : {}),
        },
        payload: {
          messageId: doc._id,
          messageType: doc.messageType,
          SvcCardId: doc.SvcCardId,
          responseCode: doc.responseCode,
          decidedBy: doc.decidedBy,
          transactionId: doc.transactionId ?? null,
        },
        dtsCreated: decided,
        dtsPublished: decided,
      };
    });
  },
};

const SHAPE_ID = 'cards-messages-in-one-shape';

/**
 * Every stored message takes the shape the engine writes: a message that placed no hold names
 * none (`holdId` null, in the message and in its event's transaction), an event that carries no
 * transaction or release says so (null), and a purchase's reversal is known by its binding alone (`reversedBy`
 * goes). A purchase whose `reversedBy` names a reversal never stored (a claim dropped as pending)
 * takes the binding itself, so that no later reversal is stored as crediting it again.
 */
const MESSAGES_IN_ONE_SHAPE: Migration = {
  id: SHAPE_ID,
  async run(db: Db) {
    const messages = db.collection<StoredDocument>(cardMessagesCollection(db).collectionName);
    const bound = new Set<unknown>();
    for await (const reversal of messages.find({ reverses: { $nin: [null] } }, { projection: { reverses: 1 } }))
      bound.add(reversal.reverses);
    await convertOnce(db, messages.collectionName, SHAPE_ID, (doc) => {
      const changes: Record<string, unknown> = {};
      if (!('holdId' in doc)) changes.holdId = null;
      if ('reversedBy' in doc) changes.reversedBy = undefined;
      if (typeof doc.reversedBy === 'string' && !bound.has(doc._id)) changes.bindingKey = `reverses:${doc._id}`;
      const payload = doc.payload;
      if (typeof payload === 'object' && payload !== null) {
        const event = payload as Record<string, unknown>;
        const transaction =
          typeof event.transaction === 'object' && event.transaction !== null ? (event.transaction as Record<string, unknown>) : null;
        if (!('transaction' in event) || !('releasesHold' in event) || (transaction && !('holdId' in transaction))) {
          changes.payload = {
            ...event,
            transaction: transaction ? { ...transaction, holdId: transaction.holdId ?? null } : null,
            releasesHold: event.releasesHold ?? null,
          };
        }
      }
      return Object.keys(changes).length > 0 ? changes : null;
    });
  },
};

/** The cards database's migrations, oldest first. */
export const CARDS_MIGRATIONS: readonly Migration[] = [MONEY_IN_MINOR_UNITS, MESSAGES_ARE_EVENTS, MESSAGES_IN_ONE_SHAPE];
