// What `fn` throws; fails the test if it returns.
export function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, but the call returned');
}

// What `promise` rejects with; fails the test if it resolves.
export async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection, but the call resolved');
}

// `fn` throws exactly `Class` (not a subclass) with exactly `message`.
export function expectError(fn, Class, message) {
  const error = thrown(fn);
  expect(error).toBeInstanceOf(Class);
  expect(error.constructor).toBe(Class);
  expect(error.message).toBe(message);
}
