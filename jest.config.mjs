// Jest runs the JS package's tests (tests/js) as native ES modules, without
// any transform: `npm run test:js` starts node with --experimental-vm-modules.
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests/js'],
  testMatch: ['**/*.test.mjs'],
  moduleFileExtensions: ['mjs', 'js', 'json'],
  transform: {},
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/tests/js/support/summary-reporter.mjs'],
};
