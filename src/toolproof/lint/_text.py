"""Word-level helpers the rules share: splitting names, verb and unit lexicons, canonical words."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Final

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[a-z][a-z0-9]*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


#: What re's IGNORECASE takes for an ASCII letter besides its two cases: dotted and dotless i, long s (the
#: Kelvin sign already lowers to k). Mapped before `str.lower`, which would turn İ into two characters.
_FOLD: Final = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


def folded(text: str) -> str:
    """`text` in lower case, one character for one. A pattern written in lower-case ASCII matches it exactly
    where the same pattern with IGNORECASE matches `text` (word boundaries and character classes included),
    at the same offsets, several times faster: rules fold a text once and match without IGNORECASE."""
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()


def cjk_chars(text: str) -> int:
    """Chinese, Japanese and Korean characters: their words are not space separated."""
    return 0 if text.isascii() else len(_CJK.findall(text))


def _lexicon(text: str) -> list[str]:
    return text.split()


@lru_cache(maxsize=1 << 16)
def name_words(name: str) -> tuple[str, ...]:
    """`getTodayPrice`, `get-today_price`, `Shop.getTodayPrice` -> `('get', 'today', 'price')` (lower case).
    Cached: the same parameter and tool names come back across a catalogue."""
    return tuple(w.lower() for w in _CAMEL.findall(name))


def verb_position(words: Sequence[str]) -> int | None:
    """Where a name's action word is: first, or second after one namespace word (`github_create_issue`)."""
    for i, w in enumerate(words[:2]):
        if w in VERBS:
            return i
    return None


def text_words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude plural strip, enough to match `orders` with `order` and `prices` with `price`."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# Verbs a tool name may start with (after an optional namespace word such as the server's name).
VERBS: Final = frozenset(_lexicon("""
protect unprotect
replace extend reply renew reindex recalculate reconcile convert lint summarise translate
accept access acknowledge activate add adjust aggregate allocate analyse analyze annotate append apply
approve archive arrange ask assign attach audit authenticate authorize autocomplete back backup batch block
book bookmark browse build bulk calculate call cancel capture change charge chat check checkout choose
classify clean clear click clone close cluster collect combine comment commit compare compile complete
compose compress compute configure confirm connect consolidate convert copy count crawl create crop cut debug
decline decode decrypt deduplicate delete deploy describe detect diff disable disconnect dismiss display
dispatch download draft drag draw drop duplicate edit embed emit enable encode encrypt end enqueue enrich
ensure enter erase estimate evaluate execute expand explain export extract fetch figure file fill filter find
finish fix flag follow fork format forward generate geocode get give go grant group handle hide highlight
hover identify import index initialize insert inspect install invite invoke issue join label launch like link
list load locate lock log login logout look lookup make manage map mark match measure merge migrate modify
monitor move mute navigate notify obtain open optimize order pack paginate parse paste patch pause perform
pick pin place plan play plot poll post predict prepare press preview print process publish pull purchase
push put query queue rank rate read reboot receive recommend record redo refresh refund register reject
release reload remember remove rename render reopen reply report request require rerun reserve reset resize
resolve respond restart restore resume retrieve retry return revert review revoke rollback rotate run save
scan schedule score scrape screenshot scroll search select send set setup share show shutdown sign simulate
sort speak split start stop store stream submit subscribe suggest summarize sum swap switch sync tag take
test toggle track transcribe transfer transform translate trigger trim type unarchive unassign unblock undo
unfollow uninstall unlock unmute unpin unsubscribe unwatch update upgrade upload upsert use validate verify
view visualize vote wait watch write zoom
"""))

# Whole names (as word lists joined by `_`) that say nothing about the job.
GENERIC_NAMES: Final = frozenset(_lexicon("""
search query run execute process handle do call invoke get fetch data info information status action tool
helper request send update lookup api function main test get_data get_info get_information fetch_data
query_data process_data handle_request run_query execute_query execute_command run_command run_tool call_api
call_tool invoke_tool do_action perform_action execute_action get_result get_results search_data get_details
get_status check_status make_request send_request api_call tool_call
"""))

# Verbs that change the world when a tool's name starts with them (used when no annotation says).
WRITE_VERBS: Final = frozenset(_lexicon("""
protect unprotect
add append apply approve archive assign attach book cancel charge close commit create delete deploy disable
dismiss drop edit enable enqueue erase fork grant insert install invite lock merge modify move order pay
patch pin place post publish purchase push put refund register reject release remove rename reopen reserve
reset restart restore revert revoke rollback schedule send set share submit subscribe transfer trigger
uninstall unlock unpin unsubscribe update upload upsert write
"""))

# Canonical synonyms for look-alike detection: the jars labelled "masala".
SYNONYMS: Final = {
    "rate": "price", "rates": "price", "prices": "price", "cost": "price", "costs": "price", "pricing": "price",
    "inventory": "stock", "stocks": "stock",
    "fetch": "get", "retrieve": "get", "obtain": "get", "lookup": "get", "look": "get", "read": "get",
    "remove": "delete", "erase": "delete", "make": "create", "new": "create", "add": "create",
    "modify": "update", "edit": "update", "change": "update",
    "find": "search", "query": "search", "lists": "list",
}

STOPWORDS: Final = frozenset(_lexicon("""
a an the of for to in on at by with from into and or but is are be been being was were it its this that these
those as if then than so such can could may might will would should must shall do does did not no yes all any
each every some one two up out over about via per your you we our us my me i they them their he she his her
which what when where who whom whose how why also only just more most other use used using given specified
specific provided based e g eg ie etc
"""))


def content_words(words: Iterable[str]) -> list[str]:
    """The words that carry meaning: no stop words, no single letters."""
    return [w for w in words if w not in STOPWORDS and len(w) > 1]


@lru_cache(maxsize=1 << 16)
def canonical(word: str) -> str:
    w = SYNONYMS.get(word, word)
    return SYNONYMS.get(stem(w), stem(w))


# Units a numeric quantity can name (in its name or description). Lower case, compared as whole words.
UNITS: Final = frozenset(_lexicon("""
beat beats bpm sample samples frame frames token tokens character characters char chars
centimeter centimeters centimetre centimetres millimeter millimeters millimetre millimetres
kg kgs kilogram kilograms g gram grams mg lb lbs pound pounds oz ounce ounces tonne tonnes ton tons quintal
quintals km kilometer kilometers kilometre kilometres m meter meters metre metres cm mm mi mile miles ft feet
foot inch inches yard yards nm nautical l liter liters litre litres ml gallon gallons ms millisecond
milliseconds s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks month
months year years yr yrs ns us microsecond microseconds epoch unix usd eur gbp inr jpy cny rs rupee rupees
dollar dollars euro euros cent cents currency sat sats satoshi wei gwei eth btc percent percentage pct ratio
fraction bps basis byte bytes kb mb gb tb kib mib gib bit bits kbps mbps c celsius f fahrenheit kelvin k
degree degrees deg rad radian radians hz khz mhz ghz w kw kwh watt watts v volt volts a amp amps mah px pixel
pixels pt dpi em rem mph kph kmh knot knots
"""))
UNIT_SUFFIXES: Final = ("_kg", "_g", "_lb", "_ms", "_s", "_sec", "_secs", "_seconds", "_minutes", "_mins", "_hours",
                        "_days", "_km", "_m", "_mi", "_usd", "_eur", "_inr", "_rs", "_pct", "_percent", "_bytes",
                        "_kb", "_mb", "_gb", "_px", "_c", "_f", "_cents", "_ml", "_l")
UNIT_SYMBOLS: Final = ("%", "$", "€", "£", "₹", "°", "¥")

# Name words that make a number a physical or money quantity (it needs a unit).
QUANTITY_WORDS: Final = frozenset(_lexicon("""
quantity qty amount weight mass duration timeout delay interval wait ttl age distance radius length height
width depth  volume area price cost budget salary income revenue fee speed velocity temperature temp
altitude elevation latitude_span dose dosage capacity balance deposit payment principal loan frequency
"""))

# Name words that make a number a count, an index or a page (no unit needed).
COUNT_WORDS: Final = frozenset(_lexicon("""
count counts num number numbers n index idx offset limit page pages id ids rank position pos retries attempts
tries results items rows lines records steps entries
"""))
