import {
  getNamedType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  parse,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { nullable, type JsonSchema } from './json-schema.js';
import { ownValue } from '../../../platform/contracts/own.js';

const SCALARS: Record<string, JsonSchema> = {
  String: { type: 'string' },
  ID: { type: 'string' },
  Int: { type: 'integer' },
  Float: { type: 'number' },
  // The adapter answers the graph's exact Decimal strings as the JSON numbers the specs show.
  Decimal: { type: 'number' },
  CurrencyCode: { type: 'string', pattern: '^[A-Z]{3}$' },
  Boolean: { type: 'boolean' },
  DateTime: { type: 'string', format: 'date-time' },
  Date: { type: 'string', format: 'date' },
  JSONObject: { type: 'object' },
};

/**
 * JSON Schemas of what a GraphQL operation returns, read from its selection set over the
 * supergraph: every selected field is present (null where the schema allows it), nothing
 * else is. A field selected as exactly one fragment spread becomes a shared component named
 * after the fragment (`...CardRecord` → `#/components/schemas/CardRecord`).
 */
export class SelectionSchemas {
  /** The components the fragments became. */
  readonly components: Record<string, JsonSchema> = {};

  constructor(private readonly schema: GraphQLSchema) {}

  /** The schema of each root field of the operation, by response key. */
  ofOperation(text: string): Record<string, JsonSchema> {
    const document = parse(text);
    const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    if (!operation) throw new Error('no operation in document');
    const fragments = new Map(
      document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]),
    );
    const root = this.schema.getRootType(operation.operation);
    if (!root) throw new Error(`the schema has no ${operation.operation} type`);
    const { properties } = this.members(root, operation.selectionSet, fragments);
    // A root field's description tells what the GraphQL operation does; the route says that for REST.
    return Object.fromEntries(Object.entries(properties).map(([key, { description: _description, ...schema }]) => [key, schema]));
  }

  private members(type: GraphQLObjectType, selectionSet: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>) {
    const properties: Record<string, JsonSchema> = {};
    const visit = (set: SelectionSetNode) => {
      for (const selection of set.selections) {
        if (selection.kind === Kind.FRAGMENT_SPREAD) {
          const fragment = fragments.get(selection.name.value);
          if (!fragment) throw new Error(`unknown fragment ${selection.name.value}`);
          visit(fragment.selectionSet);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          visit(selection.selectionSet);
        } else {
          const key = selection.alias?.value ?? selection.name.value;
          if (selection.name.value === '__typename') {
            properties[key] = { type: 'string' };
            continue;
          }
          const field = type.getFields()[selection.name.value];
          if (!field) throw new Error(`${type.name} has no field ${selection.name.value}`);
          properties[key] = this.field(field, selection.selectionSet, fragments);
        }
      }
    };
    visit(selectionSet);
    return { properties, required: Object.keys(properties) };
  }

  private field(
    field: GraphQLField<unknown, unknown>,
    selectionSet: SelectionSetNode | undefined,
    fragments: Map<string, FragmentDefinitionNode>,
  ): JsonSchema {
    const schema = this.output(field.type, selectionSet, fragments);
    const description = field.description ?? undefined;
    if (!description) return schema;
    // A $ref takes no siblings in older tools; wrap it to carry the field's own description.
    return schema.$ref ? { description, allOf: [schema] } : { ...schema, description };
  }

  private output(
    type: GraphQLOutputType,
    selectionSet: SelectionSetNode | undefined,
    fragments: Map<string, FragmentDefinitionNode>,
  ): JsonSchema {
    if (isNonNullType(type)) return this.nonNull(type.ofType, selectionSet, fragments);
    return nullable(this.nonNull(type, selectionSet, fragments));
  }

  private nonNull(
    type: GraphQLOutputType,
    selectionSet: SelectionSetNode | undefined,
    fragments: Map<string, FragmentDefinitionNode>,
  ): JsonSchema {
    if (isListType(type)) return { type: 'array', items: this.output(type.ofType, selectionSet, fragments) };
    const named = getNamedType(type);
    if (isScalarType(named)) return ownValue(SCALARS, named.name) ?? { description: `GraphQL scalar ${named.name}` };
    if (isEnumType(named)) return { type: 'string', enum: named.getValues().map((value) => value.value as string) };
    if (!isObjectType(named) || !selectionSet) throw new Error(`cannot describe ${named.name} without a selection of an object type`);
    const only = selectionSet.selections.length === 1 ? selectionSet.selections[0] : undefined;
    if (only?.kind === Kind.FRAGMENT_SPREAD) {
      const name = only.name.value;
      if (!this.components[name]) {
        const fragment = fragments.get(name);
        if (!fragment) throw new Error(`unknown fragment ${name}`);
        this.components[name] = this.objectSchema(named, fragment.selectionSet, fragments);
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    return this.objectSchema(named, selectionSet, fragments);
  }

  private objectSchema(
    type: GraphQLObjectType,
    selectionSet: SelectionSetNode,
    fragments: Map<string, FragmentDefinitionNode>,
  ): JsonSchema {
    const { properties, required } = this.members(type, selectionSet, fragments);
    return {
      type: 'object',
      ...(type.description ? { description: type.description } : {}),
      properties,
      required,
      additionalProperties: false,
    };
  }
}
