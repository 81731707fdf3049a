import {
  getNamedType,
  isCompositeType,
  isObjectType,
  isInterfaceType,
  isScalarType,
  Kind,
  parse,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** The response keys of a selection that hold Decimal values (`true`) or objects that do. */
type DecimalTree = Map<string, DecimalTree | true>;

/**
 * Turns the graph's exact Decimal amounts (strings such as "12.50") back into the JSON numbers the
 * REST specs show, for one operation's answer: which keys hold amounts is read once from the
 * operation's selection over the supergraph, so no route names its money fields by hand.
 */
export class DecimalAnswers {
  private readonly trees = new Map<string, DecimalTree>();

  constructor(private readonly schema: GraphQLSchema) {}

  /** The answer's data with every Decimal value of the operation a JSON number. */
  toNumbers(operationText: string, data: Record<string, unknown>): Record<string, unknown> {
    let tree = this.trees.get(operationText);
    if (!tree) {
      tree = this.treeOf(operationText);
      this.trees.set(operationText, tree);
    }
    return tree.size === 0 ? data : (convert(data, tree) as Record<string, unknown>);
  }

  private treeOf(text: string): DecimalTree {
    const document = parse(text);
    const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    const root = operation && this.schema.getRootType(operation.operation);
    if (!operation || !root) throw new Error('the document has no operation of the schema');
    const fragments = new Map(
      document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]),
    );
    return this.selection(root, operation.selectionSet, fragments);
  }

  private selection(
    type: GraphQLCompositeType,
    set: SelectionSetNode,
    fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  ): DecimalTree {
    const tree: DecimalTree = new Map();
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!isObjectType(type) && !isInterfaceType(type)) continue;
        const field = type.getFields()[selection.name.value];
        if (!field) continue;
        const named = getNamedType(field.type);
        const key = selection.alias?.value ?? selection.name.value;
        if (isScalarType(named) && named.name === 'Decimal') tree.set(key, true);
        else if (isCompositeType(named) && selection.selectionSet)
          merge(tree, key, this.selection(named, selection.selectionSet, fragments));
      } else {
        const fragment = selection.kind === Kind.FRAGMENT_SPREAD ? fragments.get(selection.name.value) : selection;
        if (!fragment) continue;
        const condition = fragment.typeCondition ? this.schema.getType(fragment.typeCondition.name.value) : type;
        if (!condition || !isCompositeType(condition)) continue;
        for (const [key, value] of this.selection(condition, fragment.selectionSet, fragments)) merge(tree, key, value);
      }
    }
    return tree;
  }
}

function merge(tree: DecimalTree, key: string, value: DecimalTree | true): void {
  if (value !== true && value.size === 0) return;
  const existing = tree.get(key);
  if (existing === undefined || existing === true || value === true) {
    tree.set(key, existing ?? value);
    return;
  }
  for (const [inner, innerValue] of value) merge(existing, inner, innerValue);
}

function convert(value: unknown, tree: DecimalTree | true): unknown {
  if (value === null || value === undefined) return value;
  if (Array.isArray(value)) return value.map((item) => convert(item, tree));
  if (tree === true) return typeof value === 'string' ? Number(value) : value;
  if (typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, member]) => {
      const inner = tree.get(key);
      return [key, inner === undefined ? member : convert(member, inner)];
    }),
  );
}
