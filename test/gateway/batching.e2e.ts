import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardsCollection } from '../../subgraphs/cards/src/cards/datasource.js';
import { accountsCollection } from '../../subgraphs/payments/src/accounts/datasource.js';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { startTestStack, type TestStack } from '../support/harness.js';

const QUERY = /* GraphQL */ `
  {
    me {
      SvcUserId
      cards {
        SvcCardId
        user {
          SvcUserId
          firstName
        }
        account {
          SvcAccountId
          balance
          user {
            lastName
          }
        }
      }
      beneficiaries {
        SvcBeneficiaryId
      }
      restrictions {
        restrictionName
      }
    }
  }
`;

describe('batching of by-id lookups', () => {
  let stack: TestStack;

  /** A user with `n` cards, each on its own account, and a live session; returns the token. */
  async function userWithCards(userId: string, n: number): Promise<string> {
    const users = usersCollection(stack.mongo.db('user'));
    const cards = cardsCollection(stack.mongo.db('cards'));
    const accounts = accountsCollection(stack.mongo.db('payments'));
    const demo = await users.findOne({ _id: 'demo_user_1' });
    const card = await cards.findOne({ _id: 'demo_card_1' });
    const account = await accounts.findOne({ _id: 'demo_account_1' });
    assert(demo && card && account);
    await users.insertOne({ ...demo, _id: userId, SvcUserId: userId });
    for (let i = 0; i < n; i += 1) {
      const accountId = `${userId}_acc_${i}`;
      await accounts.insertOne({ ...account, _id: accountId, SvcAccountId: accountId, SvcUserId: userId });
      await cards.insertOne({
        ...card,
        _id: `${userId}_card_${i}`,
        SvcCardId: `${userId}_card_${i}`,
        SvcUserId: userId,
        SvcAccountId: accountId,
        isMain: i === 0,
      });
    }
    return stack.issueUserToken(userId, 3600);
  }

  /** Database commands of one query, keyed `database.collection.command`, token lookups excluded. */
  /**
   * Collections read by something other than the query: the session check, and the recurring tasks
   * (the outbox engines' sweeps, the deliveries' retries, the payment links' expiry and repair),
   * which may run while it does. The query reads none of them.
   */
  const NOT_THE_QUERYS = ['sessions.', 'outbox.', 'deliveries.', 'paymentLinks.'];

  async function commandsOf(token: string, expectedCards: number): Promise<Record<string, number>> {
    // The audit record of the token's issue reaches compliance on its own: not while the query runs.
    await stack.auditForwarded();
    stack.mongo.commands.reset();
    const response = await stack.graphql<{ me: { cards: unknown[] } }>(QUERY, {}, { token });
    expect(response.body.errors).toBeUndefined();
    expect(response.body.data?.me.cards).toHaveLength(expectedCards);
    const counts: Record<string, number> = {};
    for (const name of ['user', 'cards', 'payments', 'compliance'] as const) {
      for (const [key, value] of Object.entries(stack.mongo.commands.snapshot(stack.mongo.databaseName(name)))) {
        // Token lookups, and what the services poll on their own timers, are not the query's.
        if (!NOT_THE_QUERYS.some((prefix) => key.startsWith(prefix))) counts[`${name}.${key}`] = value;
      }
    }
    return counts;
  }

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('makes one database query per entity type per subgraph, whether a user has 1 card or 25', async () => {
    const one = await commandsOf(await userWithCards('batch_one', 1), 1);
    const many = await commandsOf(await userWithCards('batch_many', 25), 25);
    expect(many).toEqual(one);
    expect(many).toEqual({
      // One for the gateway's session check (is the user still active), then three fetches of the
      // query plan: `me`, the cards' users and the accounts' users, each one `$in` query however
      // many references it carries.
      'user.users.find': 4,
      'cards.cards.find': 1,
      // The 25 accounts in one `$in`.
      'payments.accounts.find': 1,
      'payments.beneficiaries.find': 1,
      // The user's own restrictions, then (having none) the platform defaults.
      'compliance.restrictions.find': 2,
    });
  });
});
