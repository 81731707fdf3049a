import { readFileSync } from 'node:fs';
import { buildSchema, parse, type GraphQLSchema } from 'graphql';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { subgraphSdl } from '../../platform/graphql/subgraph.js';
import { describe, expect, it } from 'vitest';
import { API_SCHEMA_PATH } from '../../schema/compose.js';
import { listCoordinates, type ListCaps } from '../../platform/graphql/list-caps.js';
import { USER_LIST_CAPS } from '../../subgraphs/user/src/list-caps.js';
import { PAYMENTS_LIST_CAPS } from '../../subgraphs/payments/src/list-caps.js';
import { CARDS_LIST_CAPS } from '../../subgraphs/cards/src/list-caps.js';
import { COMPLIANCE_LIST_CAPS } from '../../subgraphs/compliance/src/list-caps.js';
import { ROUTES } from '../../rest-adapter/src/routes/index.js';
import type { JsonSchema } from '../../rest-adapter/src/contract/json-schema.js';

const api = buildSchema(readFileSync(API_SCHEMA_PATH, 'utf8'));
const TABLES: ReadonlyArray<['user' | 'payments' | 'cards' | 'compliance', ListCaps]> = [
  ['user', USER_LIST_CAPS],
  ['payments', PAYMENTS_LIST_CAPS],
  ['cards', CARDS_LIST_CAPS],
  ['compliance', COMPLIANCE_LIST_CAPS],
];
const caps = new Map<string, number>(TABLES.flatMap(([, table]) => Object.entries(table)));

/** The description that documents a coordinate's cap: the input field's, or the argument's (else its root field's). */
function descriptionOf(schema: GraphQLSchema, coordinate: string): string {
  const argument = /^(\w+)\.(\w+)\((\w+):\)$/.exec(coordinate);
  if (argument) {
    const root = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].find((type) => type?.name === argument[1]);
    const field = root?.getFields()[argument[2]!];
    const arg = field?.args.find((a) => a.name === argument[3]);
    return `${arg?.description ?? ''} ${field?.description ?? ''}`;
  }
  const [typeName, fieldName] = coordinate.split('.') as [string, string];
  const type = schema.getType(typeName);
  const fields = type && 'getFields' in type ? type.getFields() : {};
  return (Object.hasOwn(fields, fieldName) ? fields[fieldName]?.description : undefined) ?? '';
}

/** Every array of a JSON schema, with the name of the property that holds it ('' for the body itself). */
function arraysOf(schema: JsonSchema, name: string, found: Array<{ name: string; schema: JsonSchema }>): typeof found {
  const type = schema.type;
  if (type === 'array' || (Array.isArray(type) && type.includes('array'))) {
    found.push({ name, schema });
    if (schema.items && typeof schema.items === 'object') arraysOf(schema.items as JsonSchema, name, found);
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches)) for (const branch of branches as JsonSchema[]) arraysOf(branch, name, found);
  }
  const properties = schema.properties;
  if (properties && typeof properties === 'object') {
    for (const [property, member] of Object.entries(properties as Record<string, JsonSchema>)) arraysOf(member, property, found);
  }
  return found;
}

describe('bounded lists', () => {
  it('finds lists in arguments and nested input objects, so an uncapped one cannot hide', () => {
    const sample = buildSchema(`
      input Outer { inner: Inner, tags: [String!] }
      input Inner { items: [[Int!]!], deeper: Outer }
      type Query { find(ids: [ID!], filter: Outer): Int }
      type Mutation { change(input: Inner!): Int }
    `);
    expect(listCoordinates(sample)).toEqual(['Inner.items', 'Outer.tags', 'Query.find(ids:)']);
  });

  it('caps every list-typed input field and argument of the composed API schema', () => {
    const lists = listCoordinates(api);
    expect(lists.length).toBeGreaterThan(15);
    expect(lists.filter((coordinate) => !caps.has(coordinate))).toEqual([]);
    for (const [coordinate, max] of caps) expect(Number.isInteger(max) && max > 0, coordinate).toBe(true);
  });

  it("names only lists of the API schema, each in one subgraph's table", () => {
    const lists = new Set(listCoordinates(api));
    const named = TABLES.flatMap(([, table]) => Object.keys(table));
    expect(named.filter((coordinate) => !lists.has(coordinate))).toEqual([]);
    expect(named.length).toBe(new Set(named).size);
  });

  it("keeps each subgraph's caps in its own table: every list of its SDL, and nothing else (the gateway's entity fetches aside)", () => {
    for (const [name, table] of TABLES) {
      const lists = listCoordinates(buildSubgraphSchema({ typeDefs: parse(subgraphSdl(name)) })).filter(
        (coordinate) => coordinate !== 'Query._entities(representations:)',
      );
      expect(Object.keys(table).sort(), name).toEqual(lists);
    }
  });

  it('says each cap in the SDL description', () => {
    const undocumented = [...caps].filter(
      ([coordinate, max]) => !new RegExp(`\\bat most ${max}\\b`, 'i').test(descriptionOf(api, coordinate)),
    );
    expect(undocumented.map(([coordinate, max]) => `${coordinate} (${max})`)).toEqual([]);
  });

  it("gives every array of every REST request schema a maxItems, the graph's cap where the property is a capped field", () => {
    const byField = new Map<string, Set<number>>();
    for (const [coordinate, max] of caps) {
      const name = /[.(](\w+):?\)?$/.exec(coordinate)![1]!;
      byField.set(name, new Set([...(byField.get(name) ?? []), max]));
    }
    const problems: string[] = [];
    let arrays = 0;
    for (const route of ROUTES) {
      const schemas = [
        route.requestSchema,
        ...Object.values(route.paramSchemas ?? {}),
        ...Object.values(route.queryParameters ?? {}).map((p) => p.schema),
      ];
      for (const schema of schemas) {
        if (!schema) continue;
        for (const { name, schema: array } of arraysOf(schema, '', [])) {
          arrays += 1;
          const where = `${route.method} ${route.paths[0]} ${name || '(body)'}`;
          if (typeof array.maxItems !== 'number') problems.push(`${where}: no maxItems`);
          else if (byField.has(name) && !byField.get(name)!.has(array.maxItems))
            problems.push(`${where}: maxItems ${array.maxItems}, the graph caps ${[...byField.get(name)!].join('/')}`);
        }
      }
    }
    expect(arrays).toBeGreaterThan(8);
    expect(problems).toEqual([]);
  });
});
