import {
  execute,
  getOperationAST,
  Kind,
  OperationTypeNode,
  parseType,
  print,
  visit,
  type DocumentNode,
  type FieldNode,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';
import type { GatewayContext } from '../context.js';
import type { OperationExecutor } from '../pipeline/operation.js';
import { appError, ErrorCode } from '../../../platform/contracts/errors.js';
import type { BusEvent } from '../../../platform/messaging/event-bus.js';
import type { Principal } from '../../../platform/contracts/principal.js';
import { ownValue } from '../../../platform/contracts/own.js';
import type { EventPayloads, EventType } from '../../../platform/contracts/events.js';

/**
 * The Subscription fields the gateway serves: those of schema/gateway-subscriptions.graphql, the
 * declaration no subgraph makes (test/gateway/subscription-routes.test.ts holds the two together).
 */
export type SubscriptionField =
  | 'cardAuthorizations'
  | 'cardStatusChanged'
  | 'paymentLinkStatusChanged'
  | 'achPaymentUpdated'
  | 'kycApplicationCompleted'
  | 'webhookDeliveryAttempted';

/** How a subscription field is served: the catalogue's events that trigger it, and the query field that resolves one. */
export interface SubscriptionRoute<E extends EventType = EventType> {
  events: readonly E[];
  /** The Query field that reads the event's object for the subscriber, and its one argument. */
  queryField: string;
  argument: string;
  argumentType: string;
  /** The argument's value, from the payload of one of its events (a method: a route of some events is a route). */
  key(payload: EventPayloads[E]): unknown;
}

/** A route whose payload types follow from its events' names. */
function route<E extends EventType>(served: SubscriptionRoute<E>): SubscriptionRoute<E> {
  return served;
}

/** Every subscription field the gateway serves and how it is served. */
export const SUBSCRIPTION_ROUTES: { readonly [F in SubscriptionField]: SubscriptionRoute } = {
  cardAuthorizations: route({
    events: ['card.authorization'],
    queryField: 'cardAuthorization',
    argument: 'messageId',
    argumentType: 'ID!',
    key: (p) => p.messageId,
  }),
  cardStatusChanged: route({
    events: ['card.status'],
    queryField: 'card',
    argument: 'SvcCardId',
    argumentType: 'ID!',
    key: (p) => p.SvcCardId,
  }),
  paymentLinkStatusChanged: route({
    events: ['payment_link.status'],
    queryField: 'paymentLink',
    argument: 'svcTransactionId',
    argumentType: 'ID',
    key: (p) => p.svcTransactionId,
  }),
  achPaymentUpdated: route({
    events: ['ach.debit', 'ach.settled', 'ach.return'],
    queryField: 'achPayment',
    argument: 'svcTransactionId',
    argumentType: 'ID!',
    key: (p) => p.svcTransactionId,
  }),
  kycApplicationCompleted: route({
    events: ['application.completed'],
    queryField: 'application',
    argument: 'applicationId',
    argumentType: 'ID!',
    key: (p) => p.applicationId,
  }),
  webhookDeliveryAttempted: route({
    events: ['webhook.attempt'],
    queryField: 'delivery',
    argument: 'deliveryId',
    argumentType: 'ID!',
    key: (p) => p.deliveryId,
  }),
};

/** A bus event of the catalogue: its payload is its type's. */
export type CatalogueEvent = BusEvent & { type: EventType; payload: EventPayloads[EventType] };

/** Whether a bus event is one of a route's (then its payload is that event's, as the catalogue has it). */
export function triggers(route: SubscriptionRoute, event: BusEvent): event is CatalogueEvent {
  return (route.events as readonly string[]).includes(event.type);
}

/**
 * The federation's executor, for a schema with the served subscriptions: a subscription sent over
 * HTTP is refused (they are served on graphql-ws), and an operation of introspection alone runs
 * against the served schema without a query plan; every other operation is the federation's.
 */
export function servedExecutor(executor: OperationExecutor<GatewayContext>): OperationExecutor<GatewayContext> {
  return async (requestContext) => {
    const { operation } = requestContext;
    if (operation.operation === OperationTypeNode.SUBSCRIPTION) {
      return {
        errors: [
          appError(
            ErrorCode.BAD_REQUEST,
            'Subscriptions are served on /graphql over graphql-ws, Server-Sent Events (Accept: text/event-stream) and multipart HTTP (Accept: multipart/mixed;subscriptionSpec=1.0), not as a plain HTTP request.',
            { httpStatus: 400 },
          ),
        ],
      };
    }
    if (operation.selectionSet.selections.every((selection) => selection.kind === Kind.FIELD && selection.name.value.startsWith('__'))) {
      return await execute({
        schema: requestContext.schema,
        document: requestContext.document,
        operationName: requestContext.operationName,
        variableValues: requestContext.variables,
      });
    }
    return executor(requestContext);
  };
}

/**
 * Whether an event concerns the principal at all (the object's own resolver then decides what
 * it may see): a user's own, an aggregator's own, a merchant's own; internal services see all.
 */
export function mayReceive(principal: Principal, event: BusEvent): boolean {
  switch (principal.kind) {
    case 'user':
      return event.audience.SvcUserId === principal.userId;
    case 'aggregator':
      return event.audience.svcAggregatorId === principal.svcAggregatorId;
    case 'merchant':
      return event.audience.svcMerchantId === principal.svcMerchantId;
    default:
      return false;
  }
}

/** A subscription turned into the query that resolves one of its events: same selection, same response key. */
export interface PreparedSubscription {
  route: SubscriptionRoute;
  responseKey: string;
  query: DocumentNode;
  /** The query's text: subscribers with the same text, variables and principal share each event's resolution. */
  text: string;
  /** The variables the query uses. */
  variables: Record<string, unknown>;
  /** The position the subscriber resumes after (its `after` argument), or null. */
  after: string | null;
}

export const KEY_VARIABLE = '__eventKey';
/**
 * Tokens a subscription's event query may have beyond its document (the key variable's definition
 * and argument, with room): the parser's limit is raised by this much, so that a document within
 * GRAPHQL_MAX_TOKENS still resolves its events.
 */
export const PREPARED_SUBSCRIPTION_TOKENS = 64;

/** The subscription fields' argument that resumes a subscription after a position of the event log. */
const AFTER_ARGUMENT = 'after';

/** The value of an argument: a string literal, or a variable's string value; null otherwise. */
function stringArgument(value: ValueNode | undefined, variables: Record<string, unknown>): string | null {
  if (value?.kind === Kind.STRING) return value.value;
  if (value?.kind === Kind.VARIABLE) {
    const given = Object.hasOwn(variables, value.name.value) ? variables[value.name.value] : undefined;
    return typeof given === 'string' ? given : null;
  }
  return null;
}

/**
 * Prepares a validated subscription document with its variables; null when its root field is not
 * one the gateway serves. The query keeps the field's selection and directives, not its arguments
 * (the one it has, `after`, is the subscription's, not the object's), and only the variables it uses.
 */
export function prepareSubscription(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown>,
): PreparedSubscription | null {
  const operation = getOperationAST(document, operationName);
  const field = operation?.selectionSet.selections[0];
  if (!operation || operation.operation !== OperationTypeNode.SUBSCRIPTION || field?.kind !== Kind.FIELD) return null;
  const route = ownValue(SUBSCRIPTION_ROUTES, field.name.value);
  if (!route) return null;
  const responseKey = field.alias?.value ?? field.name.value;
  const after = stringArgument(field.arguments?.find((argument) => argument.name.value === AFTER_ARGUMENT)?.value, variables);
  const root: FieldNode = {
    kind: Kind.FIELD,
    alias: { kind: Kind.NAME, value: responseKey },
    name: { kind: Kind.NAME, value: route.queryField },
    arguments: [
      {
        kind: Kind.ARGUMENT,
        name: { kind: Kind.NAME, value: route.argument },
        value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: KEY_VARIABLE } },
      },
    ],
    directives: field.directives ?? [],
    ...(field.selectionSet ? { selectionSet: field.selectionSet } : {}),
  };
  const fragments = document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION);
  const used = new Set<string>();
  for (const node of [root, ...fragments]) {
    visit(node, {
      Variable: (variable) => {
        used.add(variable.name.value);
      },
    });
  }
  const definitions = (operation.variableDefinitions ?? []).filter((definition) => used.has(definition.variable.name.value));
  // Typed as an operation on its own: inside `definitions` the literal would be checked against
  // every definition node, fragments' deprecated `variableDefinitions` among them.
  const queryOperation: OperationDefinitionNode = {
    ...operation,
    operation: OperationTypeNode.QUERY,
    variableDefinitions: [
      ...definitions,
      {
        kind: Kind.VARIABLE_DEFINITION,
        variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: KEY_VARIABLE } },
        type: parseType(route.argumentType),
      },
    ],
    selectionSet: { kind: Kind.SELECTION_SET, selections: [root] },
  };
  const query: DocumentNode = { kind: Kind.DOCUMENT, definitions: [queryOperation, ...fragments] };
  const kept: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const definition of definitions) {
    const name = definition.variable.name.value;
    if (Object.hasOwn(variables, name)) kept[name] = variables[name];
  }
  return { route, responseKey, query, text: print(query), variables: kept, after };
}
