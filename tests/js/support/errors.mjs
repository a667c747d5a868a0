// `fn` throws exactly `Class` (not a subclass) with exactly `message`.
export function expectError(fn, Class, message) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(Class);
  expect(error.constructor).toBe(Class);
  expect(error.message).toBe(message);
}
