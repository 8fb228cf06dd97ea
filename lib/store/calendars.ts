import type { WeeklyCalendar } from '../plan/calendar.js';
import type { Db } from './open.js';

interface IntervalRow {
  staffId: number;
  weekday: number;
  startMinute: number;
  endMinute: number;
}

function addInterval(calendars: Map<number, Map<number, [number, number][]>>, row: IntervalRow): void {
  let calendar = calendars.get(row.staffId);
  if (calendar === undefined) {
    calendar = new Map();
    calendars.set(row.staffId, calendar);
  }
  const day = calendar.get(row.weekday);
  if (day === undefined) calendar.set(row.weekday, [[row.startMinute, row.endMinute]]);
  else day.push([row.startMinute, row.endMinute]);
}

/** Weekly working calendars of staff members. */
export function calendarStatements(db: Db) {
  const one = db.prepare<[number], IntervalRow>(`
    SELECT staff_id AS staffId, weekday, start_minute AS startMinute, end_minute AS endMinute
      FROM calendar_intervals WHERE staff_id = ? ORDER BY weekday, start_minute`);
  const many = db.prepare<[string], IntervalRow>(`
    SELECT staff_id AS staffId, weekday, start_minute AS startMinute, end_minute AS endMinute
      FROM calendar_intervals WHERE staff_id IN (SELECT value FROM json_each(?)) ORDER BY staff_id, weekday, start_minute`);
  return {
    calendarOf(staffId: number): WeeklyCalendar {
      const calendars = new Map<number, Map<number, [number, number][]>>();
      for (const row of one.all(staffId)) addInterval(calendars, row);
      return calendars.get(staffId) ?? new Map();
    },
    /** Several calendars in one query (a staff member without working time maps to an empty one). */
    calendarsOf(staffIds: readonly number[]): Map<number, WeeklyCalendar> {
      const calendars = new Map<number, Map<number, [number, number][]>>();
      for (const row of many.all(JSON.stringify(staffIds))) addInterval(calendars, row);
      const result = new Map<number, WeeklyCalendar>();
      for (const staffId of staffIds) result.set(staffId, calendars.get(staffId) ?? new Map());
      return result;
    },
  };
}

export type CalendarStatements = ReturnType<typeof calendarStatements>;
