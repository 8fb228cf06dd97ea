import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';

// The project's code standards that a compiler can check and strict mode does not: strict mode
// refuses an implicit `any` parameter, not an `any` that a library's types hand over (find-my-way's
// `store`, a fetch body's chunks, `Object.entries` of an object) and that then flows on unchecked.

const root = fileURLToPath(new URL('../..', import.meta.url));
const config = ts.getParsedCommandLineOfConfigFile(`${root}tsconfig.json`, {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
    throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  },
});
if (config === undefined) throw new Error('tsconfig.json could not be read');
const shipped = config.fileNames.filter((file) => /\/(lib|adapters|bin)\//.test(file));
const program = ts.createProgram(shipped, config.options);
const checker = program.getTypeChecker();
const sourceFiles = program.getSourceFiles().filter((file) => shipped.includes(file.fileName));

const where = (file: ts.SourceFile, node: ts.Node): string =>
  `${file.fileName.slice(root.length)}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1} ${node.getText(file).slice(0, 60)}`;

/**
 * Identifiers that name a type, an import or export, a binding's property or an accessed property
 * (the access itself is checked): they are not values that flow.
 */
function namesNoValue(node: ts.Identifier): boolean {
  const parent = node.parent;
  return (
    ts.isImportSpecifier(parent) || ts.isImportClause(parent) || ts.isNamespaceImport(parent) || ts.isExportSpecifier(parent) ||
    (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
    ts.isTypeReferenceNode(parent) || ts.isQualifiedName(parent) || ts.isExpressionWithTypeArguments(parent) ||
    ts.isTypeQueryNode(parent) || ts.isTypePredicateNode(parent) ||
    (ts.isBindingElement(parent) && parent.propertyName === node)
  );
}

/** `const value: unknown = library.untyped`: where an `any` from outside becomes something to narrow. */
function takenAsUnknown(node: ts.Node): boolean {
  const parent = node.parent;
  return ts.isVariableDeclaration(parent) && parent.initializer === node && parent.type?.kind === ts.SyntaxKind.UnknownKeyword;
}

t.test('lib/: no value is typed any, except a JSON.parse result (narrowed or asserted where it is parsed) and one taken as unknown', async (tt) => {
  const found: string[] = [];
  for (const file of sourceFiles.filter((source) => source.fileName.startsWith(`${root}lib/`))) {
    const visit = (node: ts.Node): void => {
      const isValue =
        (ts.isIdentifier(node) && !namesNoValue(node)) ||
        ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node) ||
        (ts.isCallExpression(node) && node.expression.getText(file) !== 'JSON.parse');
      if (isValue && !takenAsUnknown(node) && (checker.getTypeAtLocation(node).flags & ts.TypeFlags.Any) !== 0) found.push(where(file, node));
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  tt.ok(sourceFiles.length > 50, 'the check reads the shipped sources');
  tt.same(found, [], 'values typed any');
});

t.test('lib/, adapters/, bin/: no default exports', async (tt) => {
  const found: string[] = [];
  for (const file of sourceFiles) {
    for (const statement of file.statements) {
      const isDefault =
        (ts.isExportAssignment(statement) && statement.isExportEquals !== true) ||
        (ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.DefaultKeyword) === true) ||
        (ts.isExportDeclaration(statement) && statement.exportClause !== undefined && ts.isNamedExports(statement.exportClause) &&
          statement.exportClause.elements.some((element) => element.name.text === 'default'));
      if (isDefault) found.push(where(file, statement));
    }
  }
  tt.same(found, [], 'default exports');
});
