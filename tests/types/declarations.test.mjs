// web/index.d.ts against the code, with the TypeScript compiler API:
// - the keys the JS accepts in each options, config or weights object
//   (web/src/option-keys.js) are those of the interface of the same name,
//   so a key renamed on one side only fails here;
// - the names C++ accepts for each config field (module.choices) and the
//   builds are the .d.ts unions (ActivationName, NormKindName, ...);
// - usage.mts names every exported declaration and every member of every
//   exported interface (each overload and constructor too), so that
//   `tsc -p tests/types` checks a use of all of them;
// - the JS of the package (web/index.js, web/src/) passes the compiler's
//   checks of plain JS: no unknown names, no unused imports, locals or
//   parameters.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { createAttentionModule } from '../../web/index.js';
import { BUILDS } from '../../web/src/loader.js';
import { OPTION_KEYS } from '../../web/src/option-keys.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const webDir = path.resolve(here, '..', '..', 'web');
// index.d.ts re-exports the files of web/types, which hold the declarations.
const typesDir = path.join(webDir, 'types');
const dtsPaths = [path.join(webDir, 'index.d.ts'), ...fs.readdirSync(typesDir)
  .filter((f) => f.endsWith('.d.ts')).map((f) => path.join(typesDir, f))];
const usagePath = path.join(here, 'usage.mts');

const config = ts.getParsedCommandLineOfConfigFile(path.join(here, 'tsconfig.json'), {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(d.messageText) });
const program = ts.createProgram(config.fileNames, config.options);
const checker = program.getTypeChecker();
const dtsFiles = dtsPaths.map((p) => program.getSourceFile(p));
const usage = program.getSourceFile(usagePath);

test('index.d.ts reaches every file of web/types', () => {
  assert.deepEqual(dtsFiles.filter((f) => f === undefined), []);
});

const isExported = (node) =>
  ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export;
const exported = dtsFiles.flatMap((f) => f?.statements ?? [])
  .filter((s) => isExported(s) && s.name !== undefined);
const interfaces = new Map(exported.filter(ts.isInterfaceDeclaration)
  .map((d) => [d.name.text, d]));

function exportedType(name) {
  const declaration = exported.find((d) => d.name.text === name);
  assert.ok(declaration, `index.d.ts exports no ${name}`);
  return checker.getTypeAtLocation(declaration.name);
}

const sorted = (names) => [...names].sort();

test('the keys the JS accepts are those of the .d.ts interfaces', () => {
  for (const [name, keys] of Object.entries(OPTION_KEYS)) {
    // With inherited ones (LayerNormOptions extends LayerNormWeights).
    const declared = checker.getPropertiesOfType(exportedType(name)).map((p) => p.name);
    assert.deepEqual(sorted(keys), sorted(declared), `keys of ${name}`);
  }
});

test('every options, config and weights interface has its keys in option-keys.js', () => {
  const inputs = [...interfaces.keys()]
    .filter((n) => /(Options|Config|Weights|State)$/.test(n) && !n.startsWith('Resolved'));
  assert.deepEqual(sorted(Object.keys(OPTION_KEYS)), sorted(inputs));
});

test('the names C++ accepts (module.choices) and the builds are the .d.ts unions', async () => {
  const members = (name) => exportedType(name).types.map((t) => t.value);
  const sa = await createAttentionModule({ threads: 1 });
  try {
    for (const [field, union] of [['activation', 'ActivationName'], ['norm', 'NormKindName'],
      ['mixer', 'MixerName'], ['normPlacement', 'NormPlacementName'],
      ['weights', 'WeightTypeName'], ['cacheType', 'CacheTypeName'],
      ['causal', 'CausalAlignmentName'], ['returnScores', 'ScoresStageName']]) {
      assert.deepEqual(sorted(sa.choices[field]), sorted(members(union)), union);
    }
  } finally {
    sa.dispose();
  }
  assert.deepEqual(sorted(Object.keys(BUILDS)), sorted(members('BuildName')));
});

// Declarations of index.d.ts that usage.mts reaches.
function usedDeclarations() {
  const used = new Set();
  const mark = (symbol) => {
    if (symbol === undefined) return;
    const s = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    for (const d of s.declarations ?? []) used.add(d);
  };
  const visit = (node) => {
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) {
      mark(checker.getSymbolAtLocation(node));
    } else if (ts.isElementAccessExpression(node)) {
      // obj[Symbol.dispose]
      const type = checker.getTypeAtLocation(node.expression);
      const key = checker.getTypeAtLocation(node.argumentExpression);
      for (const p of checker.getPropertiesOfType(type)) {
        const d = p.valueDeclaration;
        if (d && ts.isComputedPropertyName(d.name) &&
            checker.getTypeAtLocation(d.name.expression) === key) mark(p);
      }
    } else if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      // The overload or construct signature that was chosen.
      const declaration = checker.getResolvedSignature(node)?.declaration;
      if (declaration) used.add(declaration);
    } else if (ts.isObjectLiteralExpression(node)) {
      // Keys of an object literal typed by its context (options, weights).
      const type = checker.getContextualType(node);
      for (const p of node.properties) {
        if (type && p.name && !ts.isComputedPropertyName(p.name)) {
          mark(checker.getPropertyOfType(checker.getNonNullableType(type), p.name.text));
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(usage);
  return used;
}

test('usage.mts uses every declaration and member of index.d.ts', () => {
  const used = usedDeclarations();
  const missing = [];
  for (const d of exported) {
    if (!used.has(d)) missing.push(d.name.text);
  }
  for (const [name, declaration] of interfaces) {
    for (const member of declaration.members) {
      const label = ts.isConstructSignatureDeclaration(member) ? 'new'
        : member.name.getText();
      const overloads = declaration.members.filter((m) => m.name?.getText() === label);
      const which = overloads.length > 1 ? ` (overload ${overloads.indexOf(member) + 1})` : '';
      if (!used.has(member)) missing.push(`${name}.${label}${which}`);
    }
  }
  assert.deepEqual(missing, []);
});

test('the JS of the package passes tsc --checkJs', () => {
  const entry = path.join(webDir, 'index.js');
  const js = ts.createProgram([entry], {
    allowJs: true, checkJs: true, noEmit: true, noUnusedLocals: true,
    noUnusedParameters: true, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts', 'lib.dom.d.ts'], types: ['node'],
  });
  const ours = (file) => file === entry || file.startsWith(path.join(path.dirname(entry), 'src'));
  // The emcc glue of dist/ is someone else's code (and absent before a build).
  const diagnostics = ts.getPreEmitDiagnostics(js).filter((d) => d.file && ours(d.file.fileName) &&
    !(d.code === 2307 && /'\.\.\/dist\//.test(ts.flattenDiagnosticMessageText(d.messageText))));
  assert.equal(ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f, getCurrentDirectory: () => here, getNewLine: () => '\n',
  }), '');
});

// TypeScript 5.9 (the root's) and 7 (tsgo, tests/types' own package.json) on
// wrong-options.mts: each misspelled option is named. TypeScript 7 reports
// only the last overload that failed, which must be the tensor one.
const compilers = [
  ['TypeScript 5.9', path.resolve(here, '..', '..', 'node_modules', '.bin', 'tsc')],
  ['TypeScript 7', path.join(here, 'node_modules', '.bin', 'tsgo')],
];
for (const [name, bin] of compilers) {
  test(`${name} names the misspelled forward option`, () => {
    const run = spawnSync(bin, ['-p', path.join(here, 'tsconfig.wrong-options.json')],
      { encoding: 'utf8' });
    assert.ok(run.stdout !== undefined && run.error === undefined, String(run.error));
    assert.notEqual(run.status, 0, 'wrong-options.mts compiled');
    for (const [line, key] of [[13, 'returnAttnWeight'], [14, 'causall'], [15, 'returnScore']]) {
      const message = run.stdout.split(/\n(?=\S)/).find((m) => m.includes(`.mts(${line},`));
      assert.ok(message, `no error on line ${line}:\n${run.stdout}`);
      assert.match(message, new RegExp(`'${key}' does not exist in type 'ForwardOptions`));
      if (name === 'TypeScript 7') assert.doesNotMatch(message, /PrecomputedKeyValue/);
    }
  });
}
