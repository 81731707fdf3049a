import { DEMO } from '../../platform/domain/demo.js';
import type { HttpService } from '../../platform/http/server.js';
import { PRINCIPAL_HEADER, signPrincipal } from '../../platform/security/signed-headers.js';
import type { GraphQLBody, TestStack } from './harness.js';

/** The card processor's service key the card tests configure (`SERVICE_KEYS=card-processor=…`). */
export const PROCESSOR_KEY = 'card-processor-key-0123456789abcdefgh';

/** The card processor's mutation, with every field of the decision the tests read. */
export const AUTHORIZE =
  'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { messageId responseCode approved decidedBy reason transactionId decisionMs } }';

/** A card message as the tests send it: the documented fields, and any other a test adds or overrides. */
export type CardMessageInput = {
  messageType: string;
  svcCardId: string;
  amount: number;
  currency: string;
  merchantName: string;
  mcc: string;
  stan: string;
  rrn: string;
} & Record<string, unknown>;

/**
 * Card messages of one test file: the demo user's first card at a grocery, with a STAN of its own
 * sequence from `firstStan` and a retrieval reference starting with `rrnPrefix` (three letters),
 * so that files running side by side never send the same message.
 */
export function cardMessages(firstStan: number, rrnPrefix: string, defaults: Record<string, unknown> = {}) {
  let stan = firstStan;
  return {
    /** The next STAN of the sequence. */
    nextStan: (): string => String((stan += 1)),
    /** A message with the next STAN, `defaults` and then `overrides` applied. */
    message: (overrides: Record<string, unknown> = {}): CardMessageInput => {
      stan += 1;
      const base = {
        messageType: '0200',
        svcCardId: DEMO.cardIds[0],
        amount: 10,
        currency: 'USD',
        merchantName: 'Corner Grocery',
        mcc: '5411',
        stan: String(stan),
        rrn: `${rrnPrefix}${String(stan).padStart(9, '0')}`,
        ...defaults,
      };
      return { ...base, ...overrides };
    },
  };
}

/** A card message's decision, as AUTHORIZE selects it. */
export interface CardDecision {
  messageId: string;
  responseCode: string;
  approved: boolean;
  decidedBy: string;
  reason: string;
  transactionId: string | null;
  decisionMs: number;
}

/** Authorizes card messages as the card processor does, through the stack's gateway; a GraphQL error fails the test. */
export function authorizeThrough(stack: TestStack): (input: Record<string, unknown>) => Promise<CardDecision> {
  return async (input) => {
    const response = await stack.graphql<{ authorizeCardMessage: CardDecision }>(AUTHORIZE, { input }, { 'x-service-key': PROCESSOR_KEY });
    if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
    return response.body.data!.authorizeCardMessage;
  };
}

/** Authorizes card messages at one cards replica, with the principal the gateway would forward; a GraphQL error fails the test. */
export function authorizeAt(replica: HttpService, internalSecret: string): (input: Record<string, unknown>) => Promise<CardDecision> {
  return async (input) => {
    const principal = signPrincipal({ kind: 'service', service: 'card-processor' }, internalSecret);
    const response = await fetch(`${replica.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [PRINCIPAL_HEADER]: principal },
      body: JSON.stringify({ query: AUTHORIZE, variables: { input } }),
    });
    const body = (await response.json()) as GraphQLBody<{ authorizeCardMessage: CardDecision }>;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!.authorizeCardMessage;
  };
}
