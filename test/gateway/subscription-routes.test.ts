import { readFileSync } from 'node:fs';
import { buildSchema, getNamedType, isNonNullType, parse, Kind, type ObjectTypeDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SUBSCRIPTION_ROUTES } from '../../gateway/src/subscriptions/routes.js';
import { API_SCHEMA_PATH, GATEWAY_SUBSCRIPTIONS_PATH, readSubgraphSdls } from '../../schema/compose.js';

/** The Subscription fields the gateway declares (schema/gateway-subscriptions.graphql). */
const declared = parse(readFileSync(GATEWAY_SUBSCRIPTIONS_PATH, 'utf8'))
  .definitions.filter(
    (definition): definition is ObjectTypeDefinitionNode =>
      definition.kind === Kind.OBJECT_TYPE_DEFINITION && definition.name.value === 'Subscription',
  )
  .flatMap((definition) => (definition.fields ?? []).map((field) => field.name.value));
const api = buildSchema(readFileSync(API_SCHEMA_PATH, 'utf8'));

describe('the subscriptions the gateway serves', () => {
  it('serves every Subscription field it declares, and declares every one it serves', () => {
    expect(declared.length).toBeGreaterThan(0);
    expect(Object.keys(SUBSCRIPTION_ROUTES).sort()).toEqual([...declared].sort());
  });

  it("are the API schema's Subscription fields", () => {
    expect(Object.keys(api.getSubscriptionType()?.getFields() ?? {}).sort()).toEqual([...declared].sort());
  });

  it('are declared by no subgraph (no subgraph resolves them)', () => {
    for (const [name, sdl] of Object.entries(readSubgraphSdls())) {
      const subscriptions = parse(sdl).definitions.filter(
        (definition) => 'name' in definition && definition.name?.value === 'Subscription',
      );
      expect(subscriptions, name).toEqual([]);
    }
  });

  it("resolve each event through a Query field that takes the route's argument and returns the subscription's type", () => {
    const query = api.getQueryType()!.getFields();
    for (const [field, route] of Object.entries(SUBSCRIPTION_ROUTES)) {
      const resolver = query[route.queryField];
      expect(resolver, field).toBeDefined();
      expect(resolver!.args.find((argument) => argument.name === route.argument)?.type.toString(), field).toBe(route.argumentType);
      const subscribed = api.getSubscriptionType()!.getFields()[field]!.type;
      expect(isNonNullType(subscribed), field).toBe(true);
      expect(getNamedType(resolver!.type).name, field).toBe(getNamedType(subscribed).name);
    }
  });
});
