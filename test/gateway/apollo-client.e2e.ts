import assert from 'node:assert';
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql, type TypedDocumentNode } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition } from '@apollo/client/utilities';
import { Kind, OperationTypeNode } from 'graphql';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEMO } from '../../platform/domain/demo.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';

// Apollo Client as a GraphQL client would use it, with its default cache and no type policies:
// every record of a query across the four subgraphs is stored once, by its `id`.

interface Profile {
  me: {
    id: string;
    cards: Array<{ id: string; SvcCardId: string; status: string }>;
    beneficiaries: Array<{ id: string }>;
    accounts: Array<{ id: string; transactions: { edges: Array<{ node: { id: string } }> } }>;
  };
}

const PROFILE: TypedDocumentNode<Profile> = gql`
  query Profile {
    me {
      id
      SvcUserId
      firstName
      cards {
        id
        SvcCardId
        status
      }
      beneficiaries {
        id
        SvcBeneficiaryId
        name
      }
      accounts {
        id
        SvcAccountId
        transactions(first: 5) {
          edges {
            node {
              id
              transactionId
              amount
            }
          }
        }
      }
    }
  }
`;

describe('Apollo Client against the gateway', () => {
  let stack: TestStack;
  let client: ApolloClient;
  let token: string;
  let disposeSocket: () => void = () => {};

  beforeAll(async () => {
    stack = await startTestStack();
    token = await stack.loginDemo();
    const socket = createClient({
      url: `${stack.gateway.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { token },
      retryAttempts: 0,
    });
    disposeSocket = () => void socket.dispose();
    const http = new HttpLink({ uri: `${stack.gateway.url}/graphql`, headers: { token } });
    const link = ApolloLink.split(
      ({ query }) => {
        const definition = getMainDefinition(query);
        return definition.kind === Kind.OPERATION_DEFINITION && definition.operation === OperationTypeNode.SUBSCRIPTION;
      },
      new GraphQLWsLink(socket),
      http,
    );
    client = new ApolloClient({ link, cache: new InMemoryCache() });
  });

  afterAll(async () => {
    client.stop();
    disposeSocket();
    await stack.stop();
    await stack.mongo.close();
  });

  it('normalizes every entity of a query across the four subgraphs into a record of its own', async () => {
    const { data } = await client.query({ query: PROFILE });
    assert(data);
    const cache = client.cache.extract() as Record<string, Record<string, unknown> | undefined>;
    const entities = [
      data.me,
      ...data.me.cards,
      ...data.me.beneficiaries,
      ...data.me.accounts,
      ...data.me.accounts.flatMap((account) => account.transactions.edges.map((edge) => edge.node)),
    ];
    expect(data.me.cards.length).toBeGreaterThan(0);
    expect(data.me.beneficiaries.length).toBeGreaterThan(0);
    expect(data.me.accounts[0]?.transactions.edges.length).toBeGreaterThan(0);
    for (const entity of entities) {
      const key = client.cache.identify(entity);
      expect(key, JSON.stringify(entity)).toBeDefined();
      expect(cache[key!], key).toMatchObject({ id: entity.id });
    }
    // The query's root holds a reference, not a copy: each record lives once.
    expect(cache.ROOT_QUERY?.me).toEqual({ __ref: client.cache.identify(data.me) });
    expect(data.me.id).toBe(`User:${DEMO.userId}`);
  });

  it('updates a cached card in place when a subscription event carries it', async () => {
    const { data } = await client.query({ query: PROFILE, fetchPolicy: 'cache-first' });
    assert(data);
    const card = data.me.cards.find((each) => each.SvcCardId === DEMO.cardIds[0]);
    assert(card);
    expect(card.status).toBe('active');
    const events: unknown[] = [];
    const subscription = client
      .subscribe({
        query: gql`
          subscription {
            cardStatusChanged {
              id
              SvcCardId
              status
            }
          }
        `,
      })
      .subscribe({ next: (event) => events.push(event) });
    try {
      await until(
        async () => stack.gateway.subscribers(),
        (count) => count >= 1,
      );
      expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/off`, { headers: { token } })).status).toBe(200);
      await until(
        async () => events.length,
        (count) => count >= 1,
      );
      // The same record the profile query stored, changed without the query being sent again.
      const cached = client.cache.readFragment<{ status: string }>({
        id: client.cache.identify({ __typename: 'Card', id: card.id }),
        fragment: gql`
          fragment CardStatus on Card {
            status
          }
        `,
      });
      expect(cached?.status).toBe('blocked');
      const again = await client.query({ query: PROFILE, fetchPolicy: 'cache-only' });
      expect(again.data?.me.cards.find((each) => each.id === card.id)?.status).toBe('blocked');
    } finally {
      subscription.unsubscribe();
      await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/on`, { headers: { token } });
    }
  });

  it("fetches any record again by its global id with node(id:), under the owner's access rules", async () => {
    const NODE = gql`
      query Node($id: ID!) {
        node(id: $id) {
          id
          ... on User {
            firstName
          }
          ... on Account {
            SvcAccountId
          }
          ... on Card {
            SvcCardId
            status
          }
          ... on Transaction {
            transactionId
            amount
          }
          ... on Restriction {
            restrictionName
          }
        }
      }
    `;
    const FIRST_TRANSACTION: TypedDocumentNode<{
      me: { accounts: Array<{ transactions: { edges: Array<{ node: { id: string; transactionId: string } }> } }> };
    }> = gql`
      query {
        me {
          accounts {
            id
            transactions(first: 1) {
              edges {
                node {
                  id
                  transactionId
                }
              }
            }
          }
        }
      }
    `;
    const { data } = await client.query({ query: FIRST_TRANSACTION });
    const transaction = data?.me.accounts[0]?.transactions.edges[0]?.node;
    assert(transaction);
    const node = async (id: string) =>
      (await stack.graphql<{ node: Record<string, unknown> | null }>(NODE.loc!.source.body, { id }, { token })).body;
    expect((await node(`User:${DEMO.userId}`)).data?.node).toMatchObject({ id: `User:${DEMO.userId}`, firstName: 'Dana' });
    expect((await node(`Account:${DEMO.accountId}`)).data?.node).toEqual({ id: `Account:${DEMO.accountId}`, SvcAccountId: DEMO.accountId });
    expect((await node(`Card:${DEMO.cardIds[0]}`)).data?.node).toMatchObject({ SvcCardId: DEMO.cardIds[0] });
    expect((await node(transaction.id)).data?.node).toMatchObject({ id: transaction.id, transactionId: transaction.transactionId });
    // Someone else's record, keys that do not exist, a type that is not a node, and no global id at all.
    for (const id of [`User:${DEMO.friendUserId}`, 'Account:no_such_account', `Restriction:${DEMO.accountId}`, 'Wallet:w_1', 'nonsense']) {
      expect((await node(id)).data?.node ?? null, id).toBeNull();
    }
    // The demo user's own records, asked by nobody: none of their data.
    for (const id of [`User:${DEMO.userId}`, `Account:${DEMO.accountId}`, `Card:${DEMO.cardIds[0]}`, transaction.id]) {
      const anonymous = await stack.graphql<{ node: Record<string, unknown> | null }>(NODE.loc!.source.body, { id });
      expect(anonymous.body.data?.node ?? null, id).toBeNull();
    }
  });
});
