import { orderedId } from "../../src/store/ids.js";

test("ordered ids are UUIDv7 and sort in creation order, within one millisecond too", () => {
  const ids = Array.from({ length: 5000 }, () => orderedId(1_795_000_000_000));
  expect(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id))).toBe(true);
  expect([...ids].sort()).toEqual(ids);
  expect(new Set(ids).size).toBe(ids.length);
  const later = orderedId(1_795_000_000_001 + 10);
  expect(later > ids.at(-1)!).toBe(true);
});
