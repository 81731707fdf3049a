/**
 * ESLint rule `banking/no-table-lookup`: a constant table (an object literal with members bound
 * to a `const`, in any scope, here or imported, or an object member of one) must not be read with
 * a computed key that is not a literal, nor tested with `key in table`. `TABLE[key]` with `key ===
 * 'valueOf'` finds `Object.prototype.valueOf`, and `__proto__` finds the prototype itself, so a
 * key that came from a client turns a lookup into a 500 or a stored function. Use a `Map`, a
 * null-prototype table, or `isOwnKey`/`ownValue` from platform/contracts/own.ts.
 *
 * Keys typed as numbers (array-like access) or as string literals (one, or a union of them) pass:
 * the type checker has proved them to be the table's own names, through a literal, a loop over a
 * constant tuple, or a guard such as `isOwnKey`. A key cast at the lookup (`T[key as keyof typeof
 * T]`) proves nothing and is reported whatever its type.
 */
import ts from 'typescript';
import { ESLintUtils } from '@typescript-eslint/utils';

/** The expression under type assertions, `satisfies` and `Object.freeze(...)`. */
function unwrap(node) {
  for (;;) {
    if (
      ts.isAsExpression(node) ||
      ts.isSatisfiesExpression(node) ||
      ts.isParenthesizedExpression(node) ||
      ts.isTypeAssertionExpression(node)
    )
      node = node.expression;
    else if (ts.isCallExpression(node) && node.expression.getText() === 'Object.freeze' && node.arguments.length === 1)
      node = node.arguments[0];
    else return node;
  }
}

/**
 * True when the declaration is `const NAME = { ... }` with members (any scope, any module), or an
 * object-literal member of one. An object that starts empty is an accumulator the code fills, not
 * a table.
 */
function isConstantTable(declaration) {
  if (declaration && ts.isPropertyAssignment(declaration)) {
    const owner = declaration.parent.parent;
    const literal = unwrap(declaration.initializer);
    return (
      ts.isObjectLiteralExpression(literal) &&
      literal.properties.length > 0 &&
      (ts.isVariableDeclaration(owner) || ts.isPropertyAssignment(owner)) &&
      isConstantTable(owner)
    );
  }
  if (!declaration || !ts.isVariableDeclaration(declaration) || !declaration.initializer) return false;
  const list = declaration.parent;
  if (!ts.isVariableDeclarationList(list) || (list.flags & ts.NodeFlags.Const) === 0) return false;
  const literal = unwrap(declaration.initializer);
  return ts.isObjectLiteralExpression(literal) && literal.properties.length > 0;
}

/** A key written as a cast (`key as Name`, `<Name>key`; not `as const`). */
function isCast(key) {
  if (key.type === 'TSTypeAssertion') return true;
  return (
    key.type === 'TSAsExpression' &&
    !(
      key.typeAnnotation.type === 'TSTypeReference' &&
      key.typeAnnotation.typeName.type === 'Identifier' &&
      key.typeAnnotation.typeName.name === 'const'
    )
  );
}

export default ESLintUtils.RuleCreator.withoutDocs({
  meta: {
    type: 'problem',
    messages: {
      lookup:
        "'{{table}}' is a constant table read with a computed key: a key such as 'valueOf' or '__proto__' finds Object.prototype. Use a Map, a null-prototype table, or isOwnKey/ownValue from platform/contracts/own.ts.",
    },
    schema: [],
    defaultOptions: [],
  },

  create(context) {
    const services = ESLintUtils.getParserServices(context);
    const checker = services.program.getTypeChecker();
    /** The node whose symbol names the table: `T`, `T.member`, `T['member']`. */
    const nameOf = (table) => {
      if (table.type === 'Identifier') return table;
      if (table.type === 'MemberExpression' && (!table.computed || table.property.type === 'Literal')) return table.property;
      return null;
    };
    /** Reports `table[key]` and `key in table` where table is a constant table and key is not proved to be one of its names. */
    const check = (node, target, key) => {
      if (key.type === 'Literal' || (key.type === 'TemplateLiteral' && key.expressions.length === 0)) return;
      let table = target;
      while (table.type === 'TSAsExpression' || table.type === 'TSSatisfiesExpression' || table.type === 'TSNonNullExpression')
        table = table.expression;
      const name = nameOf(table);
      if (!name) return;
      let symbol = checker.getSymbolAtLocation(services.esTreeNodeToTSNodeMap.get(name));
      if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
      if (!symbol?.declarations?.some(isConstantTable)) return;
      if (!isCast(key)) {
        const keyType = checker.getTypeAtLocation(services.esTreeNodeToTSNodeMap.get(key));
        const proved = (type) => (type.flags & (ts.TypeFlags.NumberLike | ts.TypeFlags.StringLiteral)) !== 0;
        if (proved(keyType) || (keyType.isUnion() && keyType.types.every(proved))) return;
      }
      context.report({ node, messageId: 'lookup', data: { table: context.sourceCode.getText(table) } });
    };
    return {
      MemberExpression(node) {
        if (node.computed) check(node, node.object, node.property);
      },
      BinaryExpression(node) {
        if (node.operator === 'in' && node.left.type !== 'PrivateIdentifier') check(node, node.right, node.left);
      },
    };
  },
});
