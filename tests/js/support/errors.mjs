// What `fn` throws; fails the test if it returns.
export function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, but the call returned');
}

// `fn` throws exactly `Class` (not a subclass) with exactly `message`.
export function expectError(fn, Class, message) {
  const error = thrown(fn);
  expect(error).toBeInstanceOf(Class);
  expect(error.constructor).toBe(Class);
  expect(error.message).toBe(message);
}
