// The board viewer at /: the boards the registry lists, the top of one board page by page, and one
// player's rank and neighbours (on a cohort variant their cohort's top too, and in a league their
// tier), refreshed every few seconds, with how the board ranks in words.
// It reads the public API only (GET /v1/boards, /v1/games/.../variants/... and
// /v1/leaderboards/...), exactly as any client would, and shows what the API answers: ranks,
// ranges, scores and totals are never computed or re-sorted here. The words for how a board ranks
// are the service's too (/viewer/words.json, a file of this page): none are written here.
"use strict";

(() => {
  const REFRESH_MS = 5000;
  const PAGE_SIZE = 25;
  const AROUND = 5;
  // A cohort's top as the player panel lists it: at least this many, and down to the player's
  // own place in their cohort where that is further (up to the API's page limit), so that their
  // row is among those listed.
  const COHORT_TOP = 10;
  const MAX_PAGE = 100;
  // The registry gains a board each new day and week: read the list again about once a minute,
  // and at the first refresh after the browser's clock passes midnight UTC (listingDue).
  const LISTING_EVERY = 12;
  // The API's id rule (app/domain/keys.py); checked here so that an id with a "/" or a space is
  // refused with a reason instead of being sent as a different path.
  const ID_RULE = /^[A-Za-z0-9_.:-]{1,64}$/;

  const $ = (id) => document.getElementById(id);

  const view = {
    listing: null, // the last answer of GET /v1/boards
    game: null,
    variant: null,
    period: null, // the period read: "alltime" or dated ("day:2026-12-06"), as the API lists them
    // "day", "week", "month" or "season" while the reader follows the current period of that kind
    // (a link saying period=day, or the "Today" choice): the next current one replaces it as the
    // list or the API's answer moves on. null on all-time, and on a dated period chosen as such,
    // which stays put.
    follows: null,
    // The current periods of the chosen variant (`of`) as the API's answers named them, kind ->
    // id ("season" -> "season:s1"): the list's currentPeriods are UTC's and name no season, so a
    // followed season, or a followed day of a variant with a time zone of its own, is asked for by
    // kind (askedPeriod) and its answer's period.id says which it is.
    now: { of: null, periods: {} },
    drawn: false, // whether the chosen board has been drawn since it was chosen
    listingAskedOn: null, // the browser's UTC date the list was last read early for (listingDue)
    cursors: [null], // cursors[i] opens page i; page 0 needs none
    page: 0,
    nextCursor: null,
    player: null, // the open player's id
    // The chosen variant's definition (how its boards rank), read once per variant chosen: `of`
    // names the variant it is for; a failed read leaves it null and is tried again next refresh.
    rules: { of: null, definition: null },
    // The words for a definition's values (WORDS), read with the first refresh and, until a read
    // succeeds, with each one after it; null until then, and the board shows without them.
    words: null,
    scoreFormat: "integer", // how the board's scores read, as its last read said
    // playerId -> rank (or a range's first rank) as last shown in each table, to mark movers.
    shown: { top: null, around: null, cohort: null },
    generation: 0, // bumped by every change of view: answers for an older view are dropped
    timer: null,
    refreshes: 0,
    controller: null,
  };

  class ApiError extends Error {
    constructor(status, problem, retryAfter) {
      super(problem && problem.detail ? problem.detail : `HTTP ${status}`);
      this.status = status;
      this.problem = problem || {};
      this.retryAfter = retryAfter;
    }
  }

  async function api(path, signal) {
    let response;
    try {
      response = await fetch(path, { headers: { Accept: "application/json" }, signal });
    } catch (error) {
      if (error.name === "AbortError") throw error;
      throw new ApiError(0, null, null); // no answer at all: the service is down or unreachable
    }
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const retryAfter = Number(response.headers.get("Retry-After")) || null;
      throw new ApiError(response.status, body, retryAfter);
    }
    return body;
  }

  // Every error state in words: what is wrong, and what the page does next.
  function describe(error) {
    const again = $("auto").checked ? " Trying again in a few seconds." : "";
    if (error.status === 0) return `The service does not answer (is it running?).${again}`;
    if (error.status === 429) {
      return `Too many requests from this address: the service asks to wait ${error.retryAfter || "a few"} s.${again}`;
    }
    const problem = error.problem;
    const title = problem.title || "an error";
    return `The service answered ${error.status} (${title}): ${problem.detail || "no detail given"}.${error.status >= 500 ? again : ""}`;
  }

  // Each message area is a polite live region (role=status in the page): a screen reader reads
  // what changed once it is idle; errors are also styled as such.
  function say(id, text, isError) {
    const element = $(id);
    element.textContent = text || "";
    element.classList.toggle("error", Boolean(isError));
  }

  const boardPath = () => `/v1/leaderboards/${[view.game, view.variant, askedPeriod()].map(encodeURIComponent).join("/")}`;
  const variantPath = () => `/v1/games/${encodeURIComponent(view.game)}/variants/${encodeURIComponent(view.variant)}`;
  const variantKey = () => JSON.stringify([view.game, view.variant]);

  // ---- how the board ranks ---------------------------------------------------------------------

  // The words for a definition's values, as the service defines them beside the values
  // themselves (app/domain: Order, Operator, ScoreFormat), served as a file of this page:
  // { order: { desc: ... }, operator: { best: ... }, scoreName: { best: ... }, scoreFormat: {...} }.
  const WORDS = "/viewer/words.json";

  // The words for one value ("order", "desc"), or null: words not read (yet), or none for it.
  function word(table, value) {
    const words = view.words && view.words[table];
    return words && typeof words === "object" && Object.hasOwn(words, value) && typeof words[value] === "string"
      ? words[value]
      : null;
  }

  // A score as its board says it reads (scoreFormat, in every board read): a time in milliseconds
  // as m:ss.fff (h:mm:ss.fff past the hour), anything else as the number the API gives. How a
  // score is written is the page's; what the format is called is the service's (word()).
  function scoreText(score) {
    if (view.scoreFormat !== "duration_ms") return String(score);
    const ms = score % 1000, s = Math.floor(score / 1000) % 60, m = Math.floor(score / 60000) % 60;
    const h = Math.floor(score / 3600000);
    const pad = (n, w) => String(n).padStart(w, "0");
    return `${h ? `${h}:${pad(m, 2)}` : m}:${pad(s, 2)}.${pad(ms, 3)}`;
  }

  // "top 92%" for 91.67 (the share ahead of the player, rounded up to a whole percent, so never
  // a better place than theirs); the last place is no "top" at all.
  function topText(percent) {
    return percent >= 100 ? "last place" : `top ${Math.min(99, Math.max(1, Math.ceil(percent)))}%`;
  }

  function topRangeText([best, worst]) {
    const first = topText(best);
    return worst >= 100 ? `${first} to last place` : `${first}–${topText(worst).slice(4)}`;
  }

  // What the score column holds: "Score" where the definition or the words are unknown (they
  // could not be read).
  function scoreName() {
    const definition = view.rules.definition;
    return (definition && word("scoreName", definition.operator)) || "Score";
  }

  // The line under the board's heading, and the score columns' headings with what the scores are
  // (the board's scoreFormat) as their title; without the definition or the words, no line and
  // the plain heading (the board shows all the same).
  function drawRules() {
    const definition = view.rules.definition;
    const words = definition ? [word("order", definition.order), word("operator", definition.operator)].filter(Boolean) : [];
    $("board-rule").textContent = words.join(" · ");
    $("board-rule").hidden = words.length === 0;
    const format = word("scoreFormat", view.scoreFormat);
    for (const heading of document.querySelectorAll("th.score")) {
      heading.textContent = scoreName();
      if (format) heading.title = format;
      else heading.removeAttribute("title");
    }
  }

  // ---- the board list ------------------------------------------------------------------------

  const kindOf = (period) => period.split(":")[0];
  const FOLLOWED = ["day", "week", "month", "season"]; // the kinds a link may name as "the current"
  const listedCurrent = (kind) => view.listing.currentPeriods.find((p) => kindOf(p) === kind) || null;
  // The current period of a kind for the chosen variant: as its board read last named it, else as
  // the list names it in UTC (null for a season until a read names it).
  function currentOf(kind) {
    const named = view.now.of === variantKey() ? view.now.periods[kind] : null;
    return named || listedCurrent(kind);
  }
  const isCurrent = (period) => period === "season" || currentOf(kindOf(period)) === period;

  // Whether the variant's days, weeks and months are its own: a time zone other than UTC (its day
  // begins at local midnight there), where the list's UTC dates may name another day. Known once
  // its definition is read.
  function ownCalendar() {
    const definition = view.rules.of === variantKey() ? view.rules.definition : null;
    return Boolean(definition && definition.timeZone && definition.timeZone !== "UTC");
  }

  // The period in the path: a followed season, or a followed day, week or month of a variant in a
  // time zone of its own, is asked for by its kind ("season", "day"), so that the API says which
  // one is current for the variant; any other as the view names it.
  const askedPeriod = () => (view.follows && (view.follows === "season" || ownCalendar()) ? view.follows : view.period);

  // A period as a link or a choice names it: "day", "week", "month" or "season" is the current
  // period of that kind, followed as it moves on ("season" itself until a read names the running
  // one); any other ("alltime", a dated period, something the API will refuse) is itself.
  function resolve(period) {
    if (!period || !FOLLOWED.includes(period)) return { period: period || null, follows: null };
    return { period: currentOf(period) || period, follows: period };
  }

  // What a choice of the period list asks for: the current period is "Today", not one date.
  const asChosen = (period) => (isCurrent(period) ? kindOf(period) : period);

  function periodName(period) {
    if (period === "alltime") return "All time";
    const [kind, label] = period.split(":");
    if (!isCurrent(period)) return label || kind;
    const names = { day: "Today", week: "This week" };
    const name = names[kind] || `This ${kind}`;
    return label ? `${name} (${label})` : name; // "This season" until a read names it
  }

  const boardName = () => `${view.game} / ${view.variant} / ${periodName(view.period)}`;
  const boardKey = () => JSON.stringify([view.game, view.variant, view.period]);

  // A variant's periods as the API lists them, plus the current period of each kind it has
  // (today's board exists as soon as anyone plays today; until then it is an empty board).
  // A variant whose definition lists seasons is offered the running season ("season") too.
  function periodsOf(variant) {
    const periods = [...variant.periods];
    const kinds = ["day", "week", "month"].filter((kind) => periods.some((p) => p.startsWith(`${kind}:`)));
    if (definedPeriods().includes("season")) kinds.push("season");
    for (const kind of kinds) {
      const current = currentOf(kind) || kind;
      if (periods.includes(current)) continue;
      const at = periods.findIndex((p) => p.startsWith(`${kind}:`));
      periods.splice(at < 0 ? periods.length : at, 0, current);
    }
    return periods;
  }

  // The kinds of period the chosen variant's definition keeps; none until it is read.
  function definedPeriods() {
    const definition = view.rules.of === variantKey() ? view.rules.definition : null;
    return definition && Array.isArray(definition.periods) ? definition.periods : [];
  }

  const listedGame = () => view.listing.games.find((g) => g.game === view.game) || null;
  const listedVariant = () => ((listedGame() || { variants: [] }).variants.find((v) => v.variant === view.variant) || null);

  // The periods offered for the chosen variant: those the list gives it; for a variant the list
  // does not hold (defined, but nobody has played it yet), all-time and the current period of
  // each kind its definition keeps, once that is read.
  function offeredPeriods() {
    const listed = listedVariant();
    if (listed) return periodsOf(listed);
    return definedPeriods().map((kind) => (kind === "alltime" ? kind : currentOf(kind) || kind));
  }

  // The choices with the one asked for among them: a board the list does not hold is offered as
  // asked (a link to it opens it), never swapped for another.
  const including = (values, asked) => (asked == null || values.includes(asked) ? values : [...values, asked]);

  // The same for a period, in its place: all-time first, then with its kind, newest first.
  function includingPeriod(periods, asked) {
    if (asked == null || periods.includes(asked)) return periods;
    if (asked === "alltime") return [asked, ...periods];
    const kind = kindOf(asked);
    let at = periods.findIndex((p) => kindOf(p) === kind && p < asked);
    if (at < 0) {
      const last = periods.map(kindOf).lastIndexOf(kind);
      at = last < 0 ? periods.length : last + 1;
    }
    return [...periods.slice(0, at), asked, ...periods.slice(at)];
  }

  function fill(select, values, chosen, name) {
    const groups = new Map(); // optgroups by period kind, in the order the API gives them
    const options = values.map((value) => {
      const option = new Option(name(value), value, false, value === chosen);
      const kind = value.includes(":") || FOLLOWED.includes(value) ? kindOf(value) : null;
      if (select.id === "period" && kind) {
        if (!groups.has(kind)) {
          const group = document.createElement("optgroup");
          group.label = `${kind[0].toUpperCase()}${kind.slice(1)}s`;
          groups.set(kind, group);
        }
        groups.get(kind).append(option);
        return groups.get(kind);
      }
      return option;
    });
    select.replaceChildren(...new Set(options));
    select.disabled = values.length === 0;
    if (!values.includes(chosen) && values.length) select.value = values[0];
    return select.value || null;
  }

  // The period: as asked where `exact` (a link, or the view kept across a new read of the list,
  // even if the list does not hold it: the API says whether it can be read), else one the
  // variant has (all-time where it has it). "day" etc. follow the current period.
  function choosePeriod(wanted, exact) {
    if (!view.variant) {
      view.period = fill($("period"), [], null, String);
      view.follows = null;
      return;
    }
    const offered = offeredPeriods();
    let { period, follows } = resolve(wanted);
    if (!period || (!exact && !offered.includes(period))) {
      period = offered.includes("alltime") || !offered.length ? "alltime" : offered[0];
      follows = isCurrent(period) ? kindOf(period) : null;
    }
    view.follows = follows;
    view.period = fill($("period"), includingPeriod(offered, period), period, periodName);
  }

  // Fill the three choices from the listing: the game and variant asked for, even where the list
  // does not hold them (a board nobody has played yet reads as an empty board), the first
  // variant of the game where none is asked, and the period as choosePeriod says.
  function choose(want, exact = false) {
    const games = view.listing.games;
    const gameId = want.game || games[0].game;
    const game = games.find((g) => g.game === gameId) || { game: gameId, variants: [] };
    view.game = fill($("game"), including(games.map((g) => g.game), gameId), gameId, String);
    const variantId = want.variant || (game.variants.length ? game.variants[0].variant : null);
    const variants = including(game.variants.map((v) => v.variant), variantId);
    view.variant = fill($("variant"), variants, variantId, String);
    choosePeriod(want.period, exact);
  }

  // Every page of GET /v1/boards (up to 100 variants a page, each variant whole on one page),
  // merged by game; at most LISTING_PAGES pages, so that a registry grown past reason does not
  // keep the page reading.
  const LISTING_PAGES = 10;

  async function readListing() {
    const games = new Map();
    let answer = null;
    let cursor = null;
    for (let page = 0; page < LISTING_PAGES; page++) {
      answer = await api(cursor ? `/v1/boards?cursor=${encodeURIComponent(cursor)}` : "/v1/boards");
      for (const game of answer.games) {
        if (games.has(game.game)) games.get(game.game).variants.push(...game.variants);
        else games.set(game.game, { ...game, variants: [...game.variants] });
      }
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
    return { ...answer, games: [...games.values()], nextCursor: null };
  }

  async function loadListing() {
    const listing = await readListing();
    view.listing = listing;
    if (!listing.games.length) {
      ["game", "variant", "period"].forEach((id) => fill($(id), [], null, String));
      return false;
    }
    choose({ game: view.game, variant: view.variant, period: view.follows || view.period }, true);
    return true;
  }

  // Whether this refresh reads the list again: the first, then every LISTING_EVERY-th, and once
  // as soon as the browser's clock has passed the end of the listed current day (every week and
  // month also ends at a midnight UTC), so that "Today" moves on at midnight rather than up to a
  // minute later. The clock only says when to ask: what is current stays the service's word, and
  // a clock ahead of the service's costs one read more a day.
  function listingDue() {
    if (view.listing === null || view.refreshes % LISTING_EVERY === 0) return true;
    const today = new Date().toISOString().slice(0, 10);
    const day = listedCurrent("day");
    if (!day || day.slice(4) >= today || view.listingAskedOn === today) return false;
    view.listingAskedOn = today;
    return true;
  }

  // ---- tables --------------------------------------------------------------------------------

  const rankText = (entry) => (entry.rank != null ? String(entry.rank) : entry.rankRange ? `${entry.rankRange[0]}–${entry.rankRange[1]}` : "?");
  const rankNumber = (entry) => (entry.rank != null ? entry.rank : entry.rankRange ? entry.rankRange[0] : null);

  function cell(row, className, content) {
    const td = document.createElement("td");
    td.className = className;
    if (content instanceof Node) td.append(content);
    else td.textContent = content;
    row.append(td);
    return td;
  }

  function hidden(text) {
    const span = document.createElement("span");
    span.className = "visually-hidden";
    span.textContent = text;
    return span;
  }

  const countryNames = typeof Intl.DisplayNames === "function" ? new Intl.DisplayNames(["en"], { type: "region" }) : null;

  // Every time the page writes is in UTC on a 24-hour clock, whatever the reader's locale and
  // time zone: "2026-12-06" and "14:05:09" (the tables' heading says UTC, the "Updated" line too).
  function utcParts(instant) {
    const iso = instant.toISOString();
    return { date: iso.slice(0, 10), clock: iso.slice(11, 19), millis: iso.slice(19, 23) };
  }

  function whenCell(iso) {
    const instant = new Date(iso);
    if (Number.isNaN(instant.getTime())) return document.createTextNode(String(iso)); // as given
    const { date, clock, millis } = utcParts(instant);
    const time = document.createElement("time");
    time.dateTime = iso;
    time.title = `${date} ${clock}${millis} UTC`;
    const day = document.createElement("span");
    day.textContent = date;
    const hour = document.createElement("span");
    hour.className = "clock";
    hour.textContent = ` ${clock}`;
    time.append(day, hour);
    return time;
  }

  // An entry's metadata (the small JSON object its submission sent: a car, a replay id) as one
  // line of "key: value" pairs; a value that is not a string is written as its JSON. Text only.
  function metadataText(metadata) {
    if (!metadata || typeof metadata !== "object") return "";
    return Object.entries(metadata)
      .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
      .join(" · ");
  }

  // The name cell: the name (a link to the player's view), the id, and the metadata under them.
  function nameContent(entry) {
    const fragment = playerLink(entry);
    if (entry.playerId === view.player) fragment.append(hidden(" (the player you looked up)"));
    const text = metadataText(entry.metadata);
    if (text) {
      const line = document.createElement("span");
      line.className = "meta";
      line.append(hidden("metadata: "), text);
      fragment.append(line);
    }
    return fragment;
  }

  function playerLink(entry) {
    const link = document.createElement("a");
    link.href = `#${hashOf({ player: entry.playerId })}`;
    link.textContent = entry.displayName || entry.playerId;
    const fragment = document.createDocumentFragment();
    fragment.append(link);
    if (entry.displayName) {
      const id = document.createElement("span");
      id.className = "id";
      id.textContent = entry.playerId;
      fragment.append(" ", id);
    }
    return fragment;
  }

  // One table's rows, with the rows that moved since this table was last drawn for the same view
  // marked (by text as well as colour), and the open player's row highlighted.
  function drawRows(table, which, entries) {
    const before = view.shown[which];
    const now = new Map();
    const rows = entries.map((entry) => {
      const row = document.createElement("tr");
      row.dataset.playerId = entry.playerId;
      const rank = rankNumber(entry);
      now.set(entry.playerId, rank);
      const move = cell(row, "move", "");
      if (before) {
        const was = before.get(entry.playerId);
        if (was === undefined) {
          row.classList.add("moved");
          move.append("new", hidden(" on this page since the last refresh"));
        } else if (was !== rank && was != null && rank != null) {
          const up = rank < was;
          row.classList.add("moved");
          move.append(`${up ? "▲" : "▼"}${Math.abs(was - rank)}`, hidden(` ${up ? "up" : "down"} since the last refresh`));
        }
      }
      const rankCell = cell(row, "rank", rankText(entry));
      if (entry.rank == null && entry.rankRange) {
        rankCell.classList.add("estimated");
        rankCell.title = "estimated: the true rank is within this range";
        rankCell.append(hidden(" (estimated range)"));
      }
      cell(row, "name", nameContent(entry));
      const country = cell(row, "country", entry.country || "");
      if (entry.country && countryNames) country.title = countryNames.of(entry.country) || "";
      cell(row, "score", scoreText(entry.score)); // the API's score, as its board says it reads
      cell(row, "when", whenCell(entry.achievedAt));
      if (entry.playerId === view.player) {
        row.classList.add("open");
        row.setAttribute("aria-current", "true");
      }
      return row;
    });
    table.tBodies[0].replaceChildren(...rows);
    view.shown[which] = now;
  }

  // ---- one refresh: the page of the board and, if one is open, the player ------------------------

  // A board read asked for by kind (askedPeriod) names the period it is: kept as the variant's
  // current one of that kind, and the view moves onto it (the day after local midnight, the
  // season after the last one ended).
  function learnPeriod(period) {
    const asked = askedPeriod();
    if (!period || typeof period.id !== "string" || !FOLLOWED.includes(asked)) return;
    if (view.now.of !== variantKey()) view.now = { of: variantKey(), periods: {} };
    view.now.periods[asked] = period.id;
    if (view.period === period.id) return;
    view.shown.top = null; // another board than the one drawn: nothing on it "moved"
    view.shown.around = null;
    view.shown.cohort = null;
    choosePeriod(asked, true);
  }

  // ---- when the board's period runs, and when it resets, in the reader's own time zone -----------

  const readerZone = new Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  // English words, a 24-hour clock, in the reader's zone: "Mon 7 Dec, 00:00".
  const localParts = new Intl.DateTimeFormat("en-US", {
    timeZone: readerZone, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23",
  });

  function localText(instant) {
    const part = Object.fromEntries(localParts.formatToParts(instant).map((p) => [p.type, p.value]));
    return `${part.weekday} ${part.day} ${part.month}, ${part.hour}:${part.minute}`;
  }

  // How long until an instant, to the minute (rounded down), from the browser's clock at each
  // draw: "3 h 12 min", "2 d 5 h", "under a minute".
  function untilText(instant) {
    const minutes = Math.floor((instant.getTime() - Date.now()) / 60000);
    if (minutes < 1) return "under a minute";
    const days = Math.floor(minutes / 1440), hours = Math.floor((minutes % 1440) / 60), rest = minutes % 60;
    if (days) return `${days} d ${hours} h`;
    return hours ? `${hours} h ${rest} min` : `${rest} min`;
  }

  // The line under the heading: the period's span, then when the board resets (the API's
  // nextResetAt) and how long until then, or when it ended; nothing for all-time. Drawn with every
  // board read, so the countdown is the reset's distance from now, never a counter kept running.
  function drawPeriod(period) {
    const line = $("board-period");
    const at = (iso) => (iso ? new Date(iso) : null);
    const starts = at(period && period.startsAt), ends = at(period && period.endsAt), next = at(period && period.nextResetAt);
    const valid = (instant) => instant && !Number.isNaN(instant.getTime());
    if (!valid(starts) || !valid(ends)) {
      line.textContent = "";
      line.hidden = true;
      return;
    }
    const zone = `(${readerZone})`;
    const parts = [`${localText(starts)} – ${localText(ends)}`];
    const now = Date.now();
    if (ends.getTime() <= now) parts.push(`Ended ${localText(ends)} ${zone}`);
    else if (starts.getTime() > now) parts.push(`Starts ${localText(starts)} ${zone}`, `in ${untilText(starts)}`);
    else if (valid(next)) parts.push(`Resets ${localText(next)} ${zone}`, `in ${untilText(next)}`);
    else parts.push(`Ends ${localText(ends)} ${zone}`, `in ${untilText(ends)}`);
    line.textContent = parts.join(" · ");
    line.hidden = false;
  }

  function drawBoard(page) {
    view.scoreFormat = page.scoreFormat;
    view.drawn = true;
    const count = page.playerCount;
    $("board-heading").textContent = `Top of ${boardName()}`;
    $("board-count").textContent = `${count} player${count === 1 ? "" : "s"}`;
    drawPeriod(page.period);
    const entries = page.entries;
    $("top").hidden = entries.length === 0;
    if (!entries.length) {
      say("board-message", view.page === 0 ? "This board is empty: nobody has a score on it yet." : "No more entries on this page.");
    } else {
      say("board-message", "");
    }
    drawRows($("top"), "top", entries);
    view.nextCursor = page.nextCursor;
    $("prev").disabled = view.page === 0;
    $("next").disabled = !page.nextCursor;
    $("page-label").textContent = entries.length
      ? `Page ${view.page + 1}: ranks ${entries[0].rank}–${entries[entries.length - 1].rank}`
      : `Page ${view.page + 1}`;
  }

  // The board asked for cannot be shown (the API refuses it, or the link names no variant): said
  // where the board would be, naming what was asked, and no other board shown in its place.
  function cannotShow(text) {
    view.drawn = false;
    view.shown.top = null;
    $("board-heading").textContent = view.variant ? `Top of ${boardName()}` : "Top";
    $("board-count").textContent = "";
    $("board-rule").hidden = true;
    $("board-period").hidden = true;
    $("top").hidden = true;
    $("prev").disabled = true;
    $("next").disabled = true;
    $("page-label").textContent = "";
    say("board-message", text, true);
  }

  function drawPlayer(found, around) {
    view.scoreFormat = found.scoreFormat;
    const entry = found.entry;
    const rank = found.rank;
    $("player-heading").textContent = entry.displayName ? `${entry.displayName} (${entry.playerId})` : entry.playerId;
    const line = $("player-rank");
    line.replaceChildren();
    const strong = document.createElement("strong");
    if (rank.kind === "exact") {
      strong.textContent = `Rank ${rank.rank}`;
      line.append(strong, ` · ${topText(rank.topPercent)} · ${scoreName().toLowerCase()} ${scoreText(entry.score)}`);
    } else {
      // An estimate is shown as the range it is, never as one number.
      strong.textContent = `Rank ${rank.rankRange[0]} to ${rank.rankRange[1]}`;
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = "estimated";
      line.append(strong, " ", badge, ` · ${topRangeText(rank.topPercentRange)} · ${scoreName().toLowerCase()} ${scoreText(entry.score)}`);
      const why = document.createElement("span");
      why.className = "why";
      why.textContent = "Too many players share this score for the service to count the exact place; the true rank is within the range.";
      line.append(why);
    }
    line.dataset.kind = rank.kind;
    say("player-message", "");
    $("player-found").hidden = false;
    drawRows($("around"), "around", around.entries);
  }

  // On a cohort variant, the rank read names the player's cohort (found.cohort: its id, its league
  // tier, their rank in it): that cohort's top, read as the API ranks it, with their row marked.
  // Nothing on any other variant. A failed read of the cohort says so in its place.
  function drawCohort(found, page) {
    const cohort = found && found.cohort;
    $("cohort-view").hidden = !cohort;
    if (!cohort) {
      view.shown.cohort = null;
      return;
    }
    const tier = cohort.tier ? ` · ${cohort.tier} tier` : "";
    $("cohort-heading").textContent = `Their cohort: ${cohort.cohortId}${tier}`;
    const line = $("cohort-rank");
    const strong = document.createElement("strong");
    strong.textContent = `Rank ${cohort.rank} in the cohort`;
    line.replaceChildren(strong);
    if (page.status === "rejected") {
      $("cohort").hidden = true;
      view.shown.cohort = null;
      say("cohort-message", `Could not read the cohort. ${describe(page.reason)}`, true);
      return;
    }
    const count = page.value.playerCount;
    line.append(` of ${count} player${count === 1 ? "" : "s"}`);
    $("cohort").hidden = false;
    say("cohort-message", "");
    drawRows($("cohort"), "cohort", page.value.entries);
  }

  // A player's league (a variant with tiers): the tier they play the current period in, their
  // cohort on its board, and what the last period's close did to them. Shown only as the API
  // answers it: nothing where it answers none (404: no tiers), or fails.
  const MOVES = { up: "moved up", down: "moved down", stay: "stayed", pending: "its close is pending" };

  function drawLeague(league) {
    const line = $("player-league");
    const answer = league && league.status === "fulfilled" ? league.value : null;
    if (!answer || typeof answer.tier !== "string") {
      line.textContent = "";
      line.hidden = true;
      return;
    }
    const strong = document.createElement("strong");
    strong.textContent = `League: ${answer.tier} tier`;
    const parts = [];
    if (!answer.period) parts.push("between seasons");
    else if (answer.cohortId) parts.push(`cohort ${answer.cohortId} in ${answer.period}`);
    else parts.push(`not yet in a cohort of ${answer.period}`);
    const previous = answer.previous;
    if (previous && typeof previous.period === "string") {
      parts.push(`${previous.period} in ${previous.tier}: ${Object.hasOwn(MOVES, previous.move) ? MOVES[previous.move] : previous.move}`);
    }
    line.replaceChildren(strong, ...parts.map((part) => ` · ${part}`));
    line.hidden = false;
  }

  // Whether the variant is a league, by what has been read of it: its definition lists tiers, or
  // the player's cohort names one.
  function isLeague(found) {
    const definition = view.rules.of === variantKey() ? view.rules.definition : null;
    const tiers = definition && Array.isArray(definition.tiers) && definition.tiers.length > 0;
    return Boolean(tiers || (found && found.cohort && found.cohort.tier));
  }

  function playerError(error) {
    $("player-found").hidden = true;
    view.shown.around = null;
    view.shown.cohort = null;
    $("player-heading").textContent = view.player;
    if (error.status === 404 && error.problem.type === "/problems/not-found") {
      say("player-message", `No player “${view.player}” on this board (${boardName()}). Check the id, or choose another board.`, true);
    } else {
      say("player-message", describe(error), true);
    }
  }

  async function refresh() {
    clearTimeout(view.timer);
    view.timer = null;
    if (view.controller) view.controller.abort();
    const controller = new AbortController();
    view.controller = controller;
    const generation = view.generation;
    let wait = REFRESH_MS;
    try {
      if (listingDue()) {
        const reread = view.listing !== null;
        const before = boardKey();
        if (!(await loadListing())) {
          say("message", "No boards yet: a board appears here once a score is submitted to it (POST /v1/scores) or it is seeded.");
          $("board").hidden = true;
          return;
        }
        $("board").hidden = false;
        say("message", "");
        if (reread && boardKey() !== before && generation === view.generation) {
          // The current period moved on (midnight UTC; a variant in a zone of its own moves on
          // when its answer names the next one, learnPeriod) and the reader follows it.
          forget({ board: true });
          remember();
        }
      }
      if (!view.variant) {
        view.refreshes += 1;
        cannotShow(`No board to show: the board list has no game “${view.game}”, and the link names no variant of it. Choose a board above.`);
        return;
      }
      const cursor = view.cursors[view.page];
      const query = `?limit=${PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const player = view.player && encodeURIComponent(view.player);
      let rulesFor = view.rules.of === variantKey() ? null : variantKey(); // once per variant
      if (rulesFor && view.follows && view.follows !== "season") {
        // Which day is current depends on the variant's time zone (askedPeriod): its definition
        // first, once. A failed read leaves the list's UTC day, and is tried again next refresh.
        let read = null;
        try {
          read = await api(variantPath(), controller.signal);
        } catch (error) {
          if (error.name === "AbortError") throw error;
        }
        if (generation !== view.generation) return;
        if (read) {
          view.rules = { of: rulesFor, definition: read };
          rulesFor = null;
          choosePeriod(view.follows, true);
        }
      }
      const path = boardPath();
      const wordsDue = view.words === null; // once, until read
      const [page, found, around, rules, words] = await Promise.allSettled([
        api(path + query, controller.signal),
        player ? api(`${path}/players/${player}`, controller.signal) : null,
        player ? api(`${path}/players/${player}/around?before=${AROUND}&after=${AROUND}`, controller.signal) : null,
        rulesFor ? api(variantPath(), controller.signal) : null,
        wordsDue ? api(WORDS, controller.signal) : null,
      ]);
      // The words are the same for every board: kept even when the view changed meanwhile. A
      // failed read costs only the words, as a failed definition read does.
      if (wordsDue && words.status === "fulfilled" && words.value && typeof words.value === "object") {
        view.words = words.value;
      }
      if (generation !== view.generation) return; // the view changed while these were out
      if (rulesFor) {
        // A failed read costs only the words: the board shows without them.
        const read = rules.status === "fulfilled";
        view.rules = { of: read ? rulesFor : null, definition: read ? rules.value : null };
        // Its periods as its definition keeps them (a variant the list does not hold; seasons).
        if (read) choosePeriod(view.follows || view.period, true);
      }
      // The player's cohort and league, once the rank read has named them (a second round trip,
      // on cohort and league variants only).
      const ranked = player && found.status === "fulfilled" ? found.value : null;
      const cohort = ranked && ranked.cohort;
      const [cohortPage, league] = await Promise.allSettled([
        cohort
          ? api(`${path}/cohorts/${encodeURIComponent(cohort.cohortId)}?limit=${Math.min(MAX_PAGE, Math.max(COHORT_TOP, cohort.rank))}`, controller.signal)
          : null,
        player && isLeague(ranked) ? api(`${variantPath()}/players/${player}/league`, controller.signal) : null,
      ]);
      if (generation !== view.generation || controller.signal.aborted) return;
      const scroll = [window.scrollX, window.scrollY];
      if (page.status === "fulfilled") {
        learnPeriod(page.value.period);
        drawBoard(page.value);
        drawRules(); // after drawBoard: the headings' title is the format that board read says
      } else throw page.reason;
      if (player) {
        if (found.status === "fulfilled" && around.status === "fulfilled") {
          drawPlayer(found.value, around.value);
          drawCohort(found.value, cohortPage);
          drawLeague(league);
        } else playerError(found.status === "rejected" ? found.reason : around.reason);
      }
      window.scrollTo(...scroll); // redrawn rows of the same height: the reader stays where they were
      $("updated").textContent = `Updated ${utcParts(new Date()).clock} UTC`;
      view.refreshes += 1;
    } catch (error) {
      if (error.name === "AbortError") return;
      if (view.listing === null) say("message", `Could not list the boards. ${describe(error)}`, true);
      else if (!view.drawn) cannotShow(`Cannot show the board ${boardName()}. ${describe(error)}`);
      else say("board-message", `Could not refresh the board; it shows the last answer. ${describe(error)}`, true);
      if (error.retryAfter) wait = error.retryAfter * 1000; // as the service asks (429, 503)
    } finally {
      // The next refresh is scheduled only once this one is done, so they never overlap.
      if (generation === view.generation && view.controller === controller && $("auto").checked) {
        view.timer = setTimeout(refresh, wait);
      }
    }
  }

  // ---- what is chosen, and the address bar -------------------------------------------------------

  function hashOf(change) {
    // A reader following the current period links to it as such ("period=day"), not to its date.
    const state = { game: view.game, variant: view.variant, period: view.follows || view.period, player: view.player, ...change };
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(state)) if (value) params.set(key, value);
    return params.toString();
  }

  function remember() {
    history.replaceState(null, "", `#${hashOf({})}`);
  }

  // A new board, page or player: forget what the tables showed (nothing "moved" on a first view).
  function forget({ board = false, player = false } = {}) {
    if (board) {
      view.cursors = [null];
      view.page = 0;
      view.shown.top = null;
      view.drawn = false;
    }
    if (board || player) {
      view.shown.around = null;
      view.shown.cohort = null;
    }
  }

  function changed(what = {}) {
    view.generation += 1;
    forget(what);
    remember();
    refresh();
  }

  const notAnId = (id) => `“${id}” is not a player id: ids are 1 to 64 letters, digits, “_”, “.”, “:” or “-”.`;

  function openPlayer(id) {
    const wanted = (id || "").trim();
    $("player").value = wanted;
    if (!wanted) return closePlayer();
    $("player-panel").hidden = false;
    if (!ID_RULE.test(wanted)) {
      view.player = null;
      $("player-found").hidden = true;
      $("player-heading").textContent = "Player";
      say("player-message", notAnId(wanted), true);
      changed({ player: true }); // no player is highlighted any more
      return;
    }
    view.player = wanted;
    $("player-heading").textContent = wanted;
    say("player-message", "Looking the player up…");
    changed({ player: true });
  }

  function closePlayer() {
    view.player = null;
    $("player").value = "";
    $("player-panel").hidden = true;
    changed({ player: true });
  }

  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    return { game: params.get("game"), variant: params.get("variant"), period: params.get("period"), player: params.get("player") };
  }

  // A new address (a link followed, the address bar edited): what it names is opened as asked; what
  // it leaves out stays as it was, unless it names another game or variant.
  function applyHash() {
    const want = fromHash();
    const same = (!want.game || want.game === view.game) && (!want.variant || want.variant === view.variant);
    const asked = {
      game: want.game || view.game,
      variant: want.variant || (same ? view.variant : null),
      period: want.period || (same ? view.follows || view.period : null),
    };
    const before = boardKey();
    if (view.listing && view.listing.games.length) choose(asked, true);
    else Object.assign(view, asked, { follows: null }); // read as asked once the list is in
    const board = boardKey() !== before;
    if (want.player && want.player !== view.player) {
      if (board) changed({ board: true });
      openPlayer(want.player);
    } else if (board) changed({ board: true });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const want = fromHash();
    Object.assign(view, { game: want.game, variant: want.variant, period: want.period });
    if (want.player) {
      $("player").value = want.player;
      $("player-panel").hidden = false;
      $("player-heading").textContent = want.player;
      if (ID_RULE.test(want.player)) view.player = want.player;
      else say("player-message", notAnId(want.player), true);
    }
    $("game").addEventListener("change", () => {
      choose({ game: $("game").value });
      changed({ board: true });
    });
    $("variant").addEventListener("change", () => {
      choose({ game: view.game, variant: $("variant").value, period: view.follows || view.period });
      changed({ board: true });
    });
    $("period").addEventListener("change", () => {
      choosePeriod(asChosen($("period").value), false);
      changed({ board: true });
    });
    $("board-form").addEventListener("submit", (event) => event.preventDefault());
    $("player-form").addEventListener("submit", (event) => {
      event.preventDefault();
      openPlayer($("player").value);
    });
    $("close-player").addEventListener("click", () => {
      closePlayer();
      $("player").focus();
    });
    $("next").addEventListener("click", () => {
      if (!view.nextCursor) return;
      view.cursors[view.page + 1] = view.nextCursor; // the API's cursor, as issued
      view.page += 1;
      view.shown.top = null;
      changed();
    });
    $("prev").addEventListener("click", () => {
      if (view.page === 0) return;
      view.page -= 1;
      view.shown.top = null;
      changed();
    });
    $("auto").addEventListener("change", () => {
      if ($("auto").checked) refresh();
      else clearTimeout(view.timer);
    });
    window.addEventListener("hashchange", applyHash);
    refresh();
  });
})();
