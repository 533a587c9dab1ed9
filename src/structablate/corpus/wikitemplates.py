"""The template table of the Wikipedia normaliser: template name -> visible text.

:func:`template_rule` says what the normaliser does with a template (by its name, lower-cased,
``_`` as a space): ``"render"`` (a renderer of :data:`RENDERERS` gives the text a reader sees),
``"drop"`` (a template that shows no article text: references, maintenance tags, hatnotes,
infoboxes and navigation boxes, layout, images, values computed from data an export lacks)
or ``None`` (not in the table: dropped, and reported by name in the build report as
*unrecognised*, so a user sees what the normaliser could not render).

Every renderer takes the renderer object of :mod:`structablate.corpus.wikitext` (anything with
``render(wikicode) -> str``) and the :class:`mwparserfromhell.nodes.Template`, and returns plain
text. Rendering choices (``docs/wikipedia.md`` lists them all):

* units (``convert``, ``cvt``): the input value(s) and unit as the page shows them — unit names
  spelled out by default (``5 kilometres``), symbols with ``abbr=on`` / ``cvt`` (``5 km``)
  and for temperatures (``5 °C``, unless ``abbr=off``),
  ``adj=on`` hyphenated (``5-kilometre``), ``sp=us`` American spelling, ``e6`` multipliers as
  words (``22 million acres``), ranges with their joiner (``5–10 km``, ``1 to 2 km``). The
  converted value in brackets is not computed (the module's rounding rules are not
  reproduced; a wrong number would be worse than none);
* numbers: ``formatnum:`` and ``nts`` group thousands with commas; scientific notation
  (``{{e|24}}``, ``{{val|5.98|e=24|u=kg}}``, ``{{10^|24}}``) as ``×10^24``;
* fractions: ``frac``, ``sfrac``, ``fraction`` as ``1/4``, ``2 1/4``; after a digit with a
  space (``1{{frac|1|4}}`` -> ``1 1/4``), a numerator or denominator of more than one token
  in brackets (``(3n + 1)/2``);
* old-style dates (``OldStyleDate`` …) as ``2 February [O.S. 23 January] 1650``; rail gauges
  (``RailGauge``) as their width (``1,435 mm``, ``3 ft 6 in``; a code not understood is
  reported); element templates (``{{Carbon}}``) as their symbol, ``nuclide`` / ``nuclide2``
  as ``14C``; ``hlist`` items joined with `` · ``, ``ubl`` items with ``; ``;
* dates: ``birth date``, ``death date``, ``start date``, ``end date``, ``dts`` … month first
  (``February 12, 1809``) unless ``df=y``; ``death date and age`` adds ``(aged 56)``,
  computed from the two dates; ``… and age`` of a living subject drops the age (it depends on
  the day of the build);
* languages: ``lang`` its text; ``lang-xx`` ``Language: text`` (name from :data:`LANGUAGES`,
  else the text alone); ``transl`` / ``transliteration`` the transliterated text (the scheme
  code of the 3-argument form is not shown); ``nihongo`` ``English (kanji, rōmaji)``;
  pronunciation guides (``IPA``, ``IPA-xx``, ``IPAc-en``, ``respell``) their text;
* chemical formulas: ``chem`` / ``chemf`` the arguments concatenated (``CH3COOH``), ``chem2``
  its argument without the sub/superscript markers;
* ship names: ``ship``, ``USS``, ``HMS`` … ``PREFIX Name (ID)``, honouring the display code;
  ``sclass`` ``Name-class type``;
* quotations (``quote``, ``blockquote``, ``cquote``, ``bquote`` …) become a paragraph of their
  own (marked with blank lines);
* one argument or a fixed string for the inline formatting templates (``nowrap``, ``small``,
  ``ndash``, ``'s`` …).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from mwparserfromhell.nodes import Template
from mwparserfromhell.wikicode import Wikicode


class _Renders(Protocol):
    def render(self, code: Wikicode | None) -> str: ...


Renderer = Callable[[_Renders, Template], "str | None"]
"""A renderer returns the visible text, or ``None`` when it cannot read its arguments (the
normaliser then reports the template as unrecognised rather than guess)."""

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")


# --------------------------------------------------------------------------------------------
# argument helpers


def positional(tpl: Template) -> list:
    return [p for p in tpl.params if not p.showkey]


def args(r: _Renders, tpl: Template) -> list[str]:
    """Rendered positional arguments, stripped."""
    return [r.render(p.value).strip() for p in positional(tpl)]


def arg(r: _Renders, tpl: Template, i: int) -> str:
    """Rendered positional argument ``i`` (1-based), stripped; ``""`` when absent."""
    pos = positional(tpl)
    return r.render(pos[i - 1].value).strip() if 0 < i <= len(pos) else ""


def named(r: _Renders, tpl: Template, *keys: str) -> str:
    """Rendered value of the first named argument of ``keys`` that is given, else ``""``."""
    for k in keys:
        if tpl.has(k):
            return r.render(tpl.get(k).value).strip()
    return ""


def _yes(value: str) -> bool:
    return value.strip().lower() in ("y", "yes", "on", "true", "1")


_NUMBER = re.compile(r"^[-−]?\d+(?:\.\d+)?$")


def group_thousands(value: str) -> str:
    """``1234567.5`` -> ``1,234,567.5``; anything that is not a plain number is unchanged."""
    v = value.strip()
    if not _NUMBER.match(v):
        return value
    sign = v[0] if v[0] in "-−" else ""
    body = v[len(sign):]
    whole, _, frac = body.partition(".")
    grouped = f"{int(whole):,}" if len(whole) > 3 else whole
    return sign + grouped + (f".{frac}" if frac else "")


# --------------------------------------------------------------------------------------------
# fixed strings and one-argument templates

LITERALS: dict[str, str] = {
    "nbsp": " ", "ndash": "–", "mdash": "—", "snd": " – ", "spnd": " – ", "spaced ndash": " – ",
    "spaced en dash": " – ", "sndash": " – ", "spaced mdash": " — ", "'": "'", "pipe": "|",
    "!": "|", "=": "=", "dot": "·", "middot": "·", "·": "·", "bull": "•", "en dash": "–",
    "em dash": "—", "zwsp": "", "break": " ", "px2": "", "'s": "'s", "'\"": "'\"",
    "\"'": "\"'", "mdashb": "—", "ndashb": "–", "thinsp": " ", "nnbsp": " ", "hair space": " ",
    "-\"": "\"", "shy": "", "wbr": "", "eqm": "⇌", "equilibrium": "⇌",
    # block separators: a paragraph break, as the rendered page shows
    "clear": "\n\n", "-": "\n\n", "clear left": "\n\n", "clear right": "\n\n",
}
"""Templates rendered to a fixed string."""

ONE_ARG: dict[str, int] = {
    "nowrap": 1, "nobr": 1, "small": 1, "smaller": 1, "big": 1, "larger": 1, "large": 1,
    "midsize": 1, "resize": 1, "abbr": 1, "abbrlink": 1, "not a typo": 1, "proper name": 1,
    "em": 1, "strong": 1, "mvar": 1, "var": 1, "math": 1, "tooltip": 1, "center": 1,
    "angbr": 1, "smallcaps": 1, "sc": 1, "sc1": 1, "uc": 1, "lc": 1, "visible anchor": 1,
    "vanchor": 1, "linktext": 1, "keypress": 1, "key press": 1, "code": 1, "mono": 1,
    "serif": 1, "chem name": 1, "sub": 1, "sup": 1, "lang": 2, "script": 2, "rtl-lang": 2,
    "nq": 1, "flag": 1, "flagcountry": 1, "legend": 2, "legend inline": 2, "ipa": 1,
    "gloss": 1, "qi": 1, "nastaliq": 1, "lang-rtl": 2, "lower": 1, "upper": 1, "samp": 1,
    "kbd": 1, "highlight": 1, "color": 2, "colour": 2, "font color": 2, "ill": 1,
    "interlanguage link": 1, "interlanguage link multi": 1, "ill2": 1, "nihongo2": 1,
    "zh": 1, "korean": 1, "notatypo": 1, "as written": 1, "lang-x": 1, "vr": 1,
}
"""Templates rendered to one positional argument (1-based)."""

QUOTES = frozenset({"quote", "blockquote", "quotation", "cquote", "quote box", "poem quote",
                    "rquote", "gquote", "centered pull quote", "bquote", "quote frame",
                    "pull quote", "block quote", "talkquote", "quote text"})
"""Quotation templates: the quoted text becomes a paragraph of its own."""

LANGUAGES: dict[str, str] = {
    "af": "Afrikaans", "am": "Amharic", "ang": "Old English", "ar": "Arabic", "arc": "Aramaic",
    "az": "Azerbaijani", "be": "Belarusian", "ber": "Berber", "bg": "Bulgarian",
    "bn": "Bengali", "bo": "Tibetan", "br": "Breton", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
    "eo": "Esperanto", "es": "Spanish", "et": "Estonian", "eu": "Basque", "fa": "Persian",
    "fi": "Finnish", "fo": "Faroese", "fr": "French", "fro": "Old French", "fy": "West Frisian",
    "ga": "Irish", "gd": "Scottish Gaelic", "gl": "Galician", "got": "Gothic",
    "grc": "Ancient Greek", "grc-gre": "Ancient Greek", "gu": "Gujarati", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian",
    "is": "Icelandic", "it": "Italian", "ja": "Japanese", "ka": "Georgian", "kk": "Kazakh",
    "km": "Khmer", "ko": "Korean", "ku": "Kurdish", "ky": "Kyrgyz", "la": "Latin",
    "lb": "Luxembourgish", "lt": "Lithuanian", "lv": "Latvian", "mi": "Māori",
    "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian", "mr": "Marathi", "ms": "Malay",
    "mt": "Maltese", "my": "Burmese", "nl": "Dutch", "no": "Norwegian", "non": "Old Norse",
    "pa": "Punjabi", "pl": "Polish", "ps": "Pashto", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "sa": "Sanskrit", "sk": "Slovak", "sl": "Slovene", "so": "Somali",
    "sq": "Albanian", "sr": "Serbian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil",
    "te": "Telugu", "tg": "Tajik", "th": "Thai", "tk": "Turkmen", "tl": "Tagalog",
    "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek", "vi": "Vietnamese",
    "yi": "Yiddish", "zh": "Chinese", "zu": "Zulu",
}
"""``lang-xx`` labels (``{{lang-fr|texte}}`` shows ``French: texte``)."""

_COUNTRY_CODES = """
ABW Aruba|AFG Afghanistan|AGO Angola|AIA Anguilla|ALB Albania|ALG Algeria|AND Andorra|
ARE United Arab Emirates|ARG Argentina|ARM Armenia|ATG Antigua and Barbuda|AUS Australia|
AUT Austria|AZE Azerbaijan|BAH Bahamas|BAN Bangladesh|BDI Burundi|BEL Belgium|BEN Benin|
BFA Burkina Faso|BGD Bangladesh|BGR Bulgaria|BHR Bahrain|BHS Bahamas|BIH Bosnia and Herzegovina|
BLR Belarus|BLZ Belize|BMU Bermuda|BOL Bolivia|BRA Brazil|BRB Barbados|BRN Brunei|BTN Bhutan|
BUL Bulgaria|BVT Bouvet Island|BWA Botswana|CAF Central African Republic|CAN Canada|
CHE Switzerland|CHI Chile|CHL Chile|CHN China|CIV Ivory Coast|CMR Cameroon|
COD Democratic Republic of the Congo|COG Republic of the Congo|COL Colombia|CPV Cape Verde|
CRC Costa Rica|CRI Costa Rica|CRO Croatia|CUB Cuba|CUR Curaçao|CYM Cayman Islands|CYP Cyprus|
CZE Czech Republic|DEN Denmark|DEU Germany|DJI Djibouti|DMA Dominica|DNK Denmark|
DOM Dominican Republic|DZA Algeria|ECU Ecuador|EGY Egypt|ENG England|ERI Eritrea|
ESH Western Sahara|ESP Spain|EST Estonia|ETH Ethiopia|FIN Finland|FJI Fiji|
FLK Falkland Islands|FRA France|FRO Faroe Islands|GAB Gabon|GBR United Kingdom|GEO Georgia|
GER Germany|GGY Guernsey|GHA Ghana|GIB Gibraltar|GIN Guinea|GMB Gambia|GNB Guinea-Bissau|
GNQ Equatorial Guinea|GRC Greece|GRD Grenada|GRE Greece|GRL Greenland|GTM Guatemala|
GUA Guatemala|GUY Guyana|HAI Haiti|HKG Hong Kong|HND Honduras|HON Honduras|HRV Croatia|
HTI Haiti|HUN Hungary|IDN Indonesia|IND India|INA Indonesia|IOM Isle of Man|IRL Ireland|
IRN Iran|IRQ Iraq|ISL Iceland|ISR Israel|ITA Italy|JAM Jamaica|JEY Jersey|JOR Jordan|
JPN Japan|KAZ Kazakhstan|KEN Kenya|KGZ Kyrgyzstan|KHM Cambodia|KOR South Korea|KSA Saudi Arabia|
KWT Kuwait|LAO Laos|LAT Latvia|LBN Lebanon|LBR Liberia|LBY Libya|LCA Saint Lucia|
LIE Liechtenstein|LKA Sri Lanka|LTU Lithuania|LUX Luxembourg|LVA Latvia|MAF Saint Martin|
MAR Morocco|MAS Malaysia|MDA Moldova|MDG Madagascar|MEX Mexico|MKD Macedonia|MLI Mali|
MLT Malta|MMR Myanmar|MNE Montenegro|MNG Mongolia|MOZ Mozambique|MRT Mauritania|
MSR Montserrat|MUS Mauritius|MWI Malawi|MYS Malaysia|NAM Namibia|NED Netherlands|NER Niger|
NGA Nigeria|NIC Nicaragua|NLD Netherlands|NOR Norway|NPL Nepal|NZL New Zealand|OMN Oman|
PAK Pakistan|PAN Panama|PER Peru|PHI Philippines|PHL Philippines|PNG Papua New Guinea|
POL Poland|POR Portugal|PRI Puerto Rico|PRK North Korea|PRT Portugal|PRY Paraguay|PUR Puerto Rico|
QAT Qatar|ROU Romania|RSA South Africa|RUS Russia|RWA Rwanda|SAU Saudi Arabia|SCO Scotland|
SDN Sudan|SEN Senegal|SGP Singapore|SGS South Georgia and the South Sandwich Islands|
SHN Saint Helena, Ascension and Tristan da Cunha|SKN Saint Kitts and Nevis|SLE Sierra Leone|
SLV El Salvador|SOM Somalia|SRB Serbia|STP São Tomé and Príncipe|SUI Switzerland|SUR Suriname|
SVK Slovakia|SVN Slovenia|SWE Sweden|SXM Sint Maarten|SYR Syria|TCA Turks and Caicos Islands|
TGO Togo|THA Thailand|TJK Tajikistan|TKM Turkmenistan|TTO Trinidad and Tobago|TUN Tunisia|
TUR Turkey|TWN Taiwan|TZA Tanzania|UAE United Arab Emirates|UGA Uganda|UK United Kingdom|
UKR Ukraine|
URU Uruguay|URY Uruguay|USA United States|UZB Uzbekistan|VCT Saint Vincent and the Grenadines|
VEN Venezuela|VGB British Virgin Islands|VIE Vietnam|VIR United States Virgin Islands|
VNM Vietnam|WAL Wales|YEM Yemen|ZAF South Africa|ZAM Zambia|ZIM Zimbabwe|ZMB Zambia|
ZWE Zimbabwe
"""
COUNTRY_FLAGS: dict[str, str] = dict(
    item.strip().split(" ", 1) for item in _COUNTRY_CODES.replace("\n", "").split("|")
)
"""Country flag templates by code (``{{BEL}}`` shows a flag and ``Belgium``): the name."""



def _one_arg(i: int) -> Renderer:
    return lambda r, tpl: arg(r, tpl, i)


# --------------------------------------------------------------------------------------------
# units


# code -> (symbol, singular name, plural name); sp=us turns metre/litre into meter/liter
UNITS: dict[str, tuple[str, str, str]] = {
    "m": ("m", "metre", "metres"), "km": ("km", "kilometre", "kilometres"),
    "cm": ("cm", "centimetre", "centimetres"), "mm": ("mm", "millimetre", "millimetres"),
    "um": ("μm", "micrometre", "micrometres"), "nm": ("nm", "nanometre", "nanometres"),
    "mi": ("mi", "mile", "miles"), "smi": ("mi", "statute mile", "statute miles"),
    "ft": ("ft", "foot", "feet"), "in": ("in", "inch", "inches"), "yd": ("yd", "yard", "yards"),
    "nmi": ("nmi", "nautical mile", "nautical miles"), "fathom": ("fathom", "fathom", "fathoms"),
    "ly": ("ly", "light-year", "light-years"), "pc": ("pc", "parsec", "parsecs"),
    "AU": ("AU", "astronomical unit", "astronomical units"),
    "au": ("AU", "astronomical unit", "astronomical units"),
    "km2": ("km²", "square kilometre", "square kilometres"),
    "m2": ("m²", "square metre", "square metres"),
    "cm2": ("cm²", "square centimetre", "square centimetres"),
    "sqmi": ("sq mi", "square mile", "square miles"),
    "sqft": ("sq ft", "square foot", "square feet"), "ft2": ("sq ft", "square foot",
                                                             "square feet"),
    "sqin": ("sq in", "square inch", "square inches"),
    "ha": ("ha", "hectare", "hectares"), "acre": ("acre", "acre", "acres"),
    "m3": ("m³", "cubic metre", "cubic metres"), "km3": ("km³", "cubic kilometre",
                                                           "cubic kilometres"),
    "cuft": ("cu ft", "cubic foot", "cubic feet"), "ft3": ("cu ft", "cubic foot",
                                                           "cubic feet"),
    "cumi": ("cu mi", "cubic mile", "cubic miles"), "L": ("L", "litre", "litres"),
    "l": ("l", "litre", "litres"), "ml": ("ml", "millilitre", "millilitres"),
    "Ml": ("Ml", "megalitre", "megalitres"), "USgal": ("US gal", "US gallon", "US gallons"),
    "impgal": ("imp gal", "imperial gallon", "imperial gallons"),
    "oilbbl": ("bbl", "barrel", "barrels"),
    "kg": ("kg", "kilogram", "kilograms"), "g": ("g", "gram", "grams"),
    "mg": ("mg", "milligram", "milligrams"), "t": ("t", "tonne", "tonnes"),
    "MT": ("t", "tonne", "tonnes"), "lb": ("lb", "pound", "pounds"),
    "oz": ("oz", "ounce", "ounces"), "LT": ("long ton", "long ton", "long tons"),
    "ST": ("short ton", "short ton", "short tons"), "st": ("st", "stone", "stone"),
    "carat": ("carat", "carat", "carats"),
    "C": ("°C", "degree Celsius", "degrees Celsius"),
    "F": ("°F", "degree Fahrenheit", "degrees Fahrenheit"),
    "°C": ("°C", "degree Celsius", "degrees Celsius"),
    "°F": ("°F", "degree Fahrenheit", "degrees Fahrenheit"),
    "K": ("K", "kelvin", "kelvins"),
    "C-change": ("°C", "degree Celsius", "degrees Celsius"),
    "F-change": ("°F", "degree Fahrenheit", "degrees Fahrenheit"),
    "K-change": ("K", "kelvin", "kelvins"),
    "km/h": ("km/h", "kilometre per hour", "kilometres per hour"),
    "kph": ("km/h", "kilometre per hour", "kilometres per hour"),
    "mph": ("mph", "mile per hour", "miles per hour"),
    "m/s": ("m/s", "metre per second", "metres per second"),
    "ft/s": ("ft/s", "foot per second", "feet per second"),
    "kn": ("kn", "knot", "knots"), "knot": ("kn", "knot", "knots"),
    "hp": ("hp", "horsepower", "horsepower"), "kW": ("kW", "kilowatt", "kilowatts"),
    "W": ("W", "watt", "watts"), "MW": ("MW", "megawatt", "megawatts"),
    "GW": ("GW", "gigawatt", "gigawatts"), "psi": ("psi", "pound per square inch",
                                                   "pounds per square inch"),
    "hPa": ("hPa", "hectopascal", "hectopascals"), "kPa": ("kPa", "kilopascal",
                                                           "kilopascals"),
    "inHg": ("inHg", "inch of mercury", "inches of mercury"),
    "mbar": ("mbar", "millibar", "millibars"), "J": ("J", "joule", "joules"),
    "kJ": ("kJ", "kilojoule", "kilojoules"), "kcal": ("kcal", "kilocalorie", "kilocalories"),
    "kWh": ("kWh", "kilowatt-hour", "kilowatt-hours"),
    "m3/s": ("m³/s", "cubic metre per second", "cubic metres per second"),
    "cuft/s": ("cu ft/s", "cubic foot per second", "cubic feet per second"),
    "m3/d": ("m³/d", "cubic metre per day", "cubic metres per day"),
    "oilbbl/d": ("bbl/d", "barrel per day", "barrels per day"),
    "PD/sqmi": ("/sq mi", "per square mile", "per square mile"),
    "PD/km2": ("/km²", "per square kilometre", "per square kilometre"),
}
"""Unit code -> (symbol, singular name, plural name), the common codes of Module:Convert."""

_TEMPERATURES = frozenset({"C", "F", "K", "°C", "°F", "C-change", "F-change", "K-change"})
_MULTIPLIERS = {"e3": "thousand", "e6": "million", "e9": "billion", "e12": "trillion"}
_SI_WORD_PREFIX = {"k": "thousand", "M": "million", "G": "billion", "T": "trillion"}
_US_SPELLING = (("metre", "meter"), ("litre", "liter"))
_JOINERS = {"-": "–", "–": "–", "to": " to ", "and": " and ", "or": " or ", "by": " by ",
            "x": " × ", "×": " × ", "+/-": " ± ", "±": " ± ", "&": " & ", "and(-)": " and ",
            "to(-)": " to ", "+": " + ", "to about": " to about "}


def _unit_words(code: str) -> tuple[str, str, str] | None:
    """(symbol, singular, plural) of ``code``, with an ``e6``-style multiplier as a word."""
    code = code.strip()
    if code in UNITS:
        return UNITS[code]
    m = re.match(r"^(e\d+)(.+)$", code)
    if m and m.group(1) in _MULTIPLIERS and m.group(2) in UNITS:
        sym, one, many = UNITS[m.group(2)]
        word = _MULTIPLIERS[m.group(1)]
        return f"{word} {many}", f"{word} {many}", f"{word} {many}"
    # oil-industry prefixes: koilbbl/d, Moilbbl, Tcuft, MUSgal
    if len(code) > 1 and code[0] in _SI_WORD_PREFIX and code[1:] in UNITS:
        sym, one, many = UNITS[code[1:]]
        word = _SI_WORD_PREFIX[code[0]]
        return f"{word} {many}", f"{word} {many}", f"{word} {many}"
    return None


def _looks_numeric(v: str) -> bool:
    return bool(re.match(r"^[-−+]?[\d,]*\.?\d+(?:e-?\d+)?$", v.strip()))


def render_convert(r: _Renders, tpl: Template, *, abbreviate: bool = False) -> str:
    """Input value(s) and unit of ``{{convert}}`` / ``{{cvt}}`` (see the module docstring)."""
    vals = args(r, tpl)
    if not vals:
        return ""
    abbr = named(r, tpl, "abbr").lower()
    if abbr in ("on", "in", "values"):
        abbreviate = True
    elif abbr in ("off", "out"):
        abbreviate = False
    adj = _yes(named(r, tpl, "adj"))
    us = named(r, tpl, "sp").lower() == "us"
    numbers = [group_thousands(vals[0]) if _looks_numeric(vals[0]) else vals[0]]
    joiners: list[str] = []
    i = 1
    while i + 1 < len(vals) and vals[i] in _JOINERS:
        joiners.append(_JOINERS[vals[i]])
        nxt = vals[i + 1]
        numbers.append(group_thousands(nxt) if _looks_numeric(nxt) else nxt)
        i += 2
    unit = vals[i] if i < len(vals) else ""
    words = _unit_words(unit)
    if unit in _TEMPERATURES and abbr not in ("off", "out"):
        abbreviate = True  # temperatures show their symbol unless abbr=off
    value = numbers[0] + "".join(j + n for j, n in zip(joiners, numbers[1:], strict=True))
    if not unit:
        return value
    if words is None:
        shown = unit  # an unknown code: shown as written
    elif abbreviate:
        shown = words[0]
    else:
        single = len(numbers) == 1 and numbers[0].strip() in ("1", "1.0")
        shown = words[1] if single or adj else words[2]
        if us:
            for gb, am in _US_SPELLING:
                shown = shown.replace(gb, am)
    if adj and not abbreviate:
        text = f"{value}-{shown.replace(' ', '-')}"
    elif words is not None and words[0].startswith(("°", "/")) and abbreviate:
        text = f"{value} {shown}" if not shown.startswith("/") else f"{value}{shown}"
    else:
        text = f"{value} {shown}"
    # a second value and unit (feet and inches, stones and pounds)
    rest = vals[i + 1:]
    if len(rest) >= 2 and _looks_numeric(rest[0]) and _unit_words(rest[1]) is not None \
            and rest[1] in ("in", "lb", "oz", "ft"):
        w2 = _unit_words(rest[1])
        text += f" {rest[0]} {w2[0] if abbreviate else (w2[1] if rest[0] == '1' else w2[2])}"
    return text


# --------------------------------------------------------------------------------------------
# numbers, fractions, scientific notation


def _sci(exp: str) -> str:
    return f"×10^{exp}" if exp else ""


def render_val(r: _Renders, tpl: Template) -> str:
    """``{{val|5.98|0.01|e=24|u=kg}}`` -> ``5.98±0.01×10^24 kg``."""
    a = args(r, tpl)
    if not a:
        return ""
    text = a[0]
    if len(a) >= 3 and a[1] and a[2]:
        text += f" +{a[1]}/−{a[2].lstrip('-−')}"
    elif len(a) >= 2 and a[1]:
        text += f"±{a[1]}"
    text += _sci(named(r, tpl, "e"))
    unit = named(r, tpl, "u", "ul")
    per = named(r, tpl, "up", "upl")
    if unit:
        text += f" {unit}"
    if per:
        text += f"/{per}"
    return text


def render_e(r: _Renders, tpl: Template) -> str:
    """``{{e|24}}`` -> ``×10^24`` (it follows the mantissa written before it)."""
    return _sci(arg(r, tpl, 1))


def render_power_of_ten(r: _Renders, tpl: Template) -> str:
    """``{{10^|24}}`` -> ``10^24``."""
    exp = arg(r, tpl, 1)
    return f"10^{exp}" if exp else "10"


FRACTION_JOIN = "\ue001"
"""Leads a rendered fraction: the normaliser turns it into a space after a digit (``1{{frac|1|4}}``
reads ``1 1/4``, not ``11/4``) and removes it elsewhere."""

_ONE_TOKEN = re.compile(r"^[-−+]?[\w.,′″'°]+$")


def _fraction_part(value: str) -> str:
    """A numerator or denominator: parenthesised unless it is one token (``3n + 1`` ->
    ``(3n + 1)``, so that ``(3n + 1)/2`` cannot read as ``3n + 1/2``)."""
    v = " ".join(value.split())
    return v if not v or _ONE_TOKEN.match(v) else f"({v})"


def render_frac(r: _Renders, tpl: Template) -> str:
    """``{{frac|1|4}}`` -> ``1/4``, ``{{sfrac|2|1|4}}`` -> ``2 1/4``, ``{{frac|4}}`` -> ``1/4``,
    ``{{sfrac|3n + 1|2}}`` -> ``(3n + 1)/2``. The text starts with :data:`FRACTION_JOIN`."""
    a = [_fraction_part(x) for x in args(r, tpl)]
    if len(a) >= 3:
        return f"{FRACTION_JOIN}{a[0]} {a[1]}/{a[2]}"
    if len(a) == 2:
        return f"{FRACTION_JOIN}{a[0]}/{a[1]}"
    return f"{FRACTION_JOIN}1/{a[0]}" if a and a[0] else ""


def render_formatted_number(r: _Renders, tpl: Template) -> str:
    """``{{nts|1234}}`` -> ``1,234``."""
    return group_thousands(arg(r, tpl, 1))


# --------------------------------------------------------------------------------------------
# dates


def _ymd(parts: list[str]) -> tuple[int, int | None, int | None] | None:
    nums = [p for p in parts[:3] if p.strip().lstrip("0").isdigit() or p.strip() == "0"]
    if not nums or not parts[0].strip().isdigit():
        return None
    y = int(parts[0])
    m = int(parts[1]) if len(parts) > 1 and parts[1].strip().isdigit() else None
    d = int(parts[2]) if len(parts) > 2 and parts[2].strip().isdigit() else None
    if m is not None and not 1 <= m <= 12:
        return None
    if d is not None and not 1 <= d <= 31:
        d = None
    return y, m, d


def format_date(y: int, m: int | None, d: int | None, day_first: bool) -> str:
    """``February 12, 1809`` (month first) or ``12 February 1809``; year and month alone as
    ``February 1809``; a year alone as ``1809``."""
    if m is None:
        return str(y)
    if d is None:
        return f"{MONTHS[m - 1]} {y}"
    return f"{d} {MONTHS[m - 1]} {y}" if day_first else f"{MONTHS[m - 1]} {d}, {y}"


def _age(later: tuple[int, int | None, int | None],
         earlier: tuple[int, int | None, int | None]) -> int | None:
    if None in later or None in earlier:
        return None
    (y1, m1, d1), (y0, m0, d0) = later, earlier
    return y1 - y0 - ((m1, d1) < (m0, d0))


def render_date(r: _Renders, tpl: Template, *, aged: bool = False) -> str:
    """A date template's date; with ``aged`` (``death date and age``) also ``(aged N)``."""
    a = args(r, tpl)
    day_first = _yes(named(r, tpl, "df"))
    first = _ymd(a[:3])
    if first is None:
        return ""
    text = format_date(*first, day_first=day_first)
    if aged:
        born = _ymd(a[3:6])
        years = _age(first, born) if born is not None else None
        if years is not None:
            text += f" (aged {years})"
    return text


def render_year(r: _Renders, tpl: Template) -> str:
    """``{{birth year and age|1950}}`` -> ``1950`` (the age depends on the build's date)."""
    y = arg(r, tpl, 1)
    return y if y.isdigit() else ""


# --------------------------------------------------------------------------------------------
# languages, transliteration, pronunciation


def render_lang_x(code: str) -> Renderer:
    def render(r: _Renders, tpl: Template) -> str:
        text = arg(r, tpl, 1)
        name = LANGUAGES.get(code)
        return f"{name}: {text}" if name and text else text

    return render


def render_transl(r: _Renders, tpl: Template) -> str:
    """``{{transl|ar|ALA|Allāh}}`` -> ``Allāh``; ``{{transl|ar|al-Jazāʾir}}`` -> ``al-Jazāʾir``."""
    a = args(r, tpl)
    return a[2] if len(a) >= 3 else (a[1] if len(a) == 2 else "")


def render_nihongo(r: _Renders, tpl: Template) -> str:
    """``{{nihongo|Tokyo|東京|Tōkyō}}`` -> ``Tokyo (東京, Tōkyō)``."""
    a = args(r, tpl)
    head = a[0] if a else ""
    extra = [x for x in a[1:3] if x]
    return f"{head} ({', '.join(extra)})" if extra and head else head or ", ".join(extra)


_IPAC_LABELS = frozenset({"lang", "pron", "local", "ipa", "also", "uk", "us", "ca", "au", "nz",
                          "ie", "za", "gb", "sc", "nyc", "audio"})


def render_ipac(r: _Renders, tpl: Template) -> str:
    """``{{IPAc-en|ˈ|æ|r|ɪ}}`` -> ``/ˈærɪ/`` (labels such as ``UK`` left out)."""
    a = args(r, tpl)
    while a and a[0].lower() in _IPAC_LABELS:
        a = a[1:]
    body = "".join(a).replace("_", " ").strip()
    return f"/{body}/" if body else ""


def render_respell(r: _Renders, tpl: Template) -> str:
    """``{{respell|ə|GLEE|teez}}`` -> ``ə-GLEE-teez``."""
    return "-".join(x for x in args(r, tpl) if x).replace("_", " ")


# --------------------------------------------------------------------------------------------
# chemistry, ships, misc


def render_chem(r: _Renders, tpl: Template) -> str:
    """``{{chem|CH|3|COOH}}`` -> ``CH3COOH``."""
    return "".join(args(r, tpl))


def render_chem2(r: _Renders, tpl: Template) -> str:
    """``{{chem2|SO4^2-}}`` -> ``SO42-``, ``{{chem2|C_{n}H_{2n+2}}}`` -> ``CnH2n+2`` (the
    sub/superscript markers ``^`` and ``_`` and their braces go)."""
    return re.sub(r"[\^_]\{([^{}]*)(?:\}|$)|[\^_]", r"\1", arg(r, tpl, 1))


_ELEMENTS = """
H hydrogen|He helium|Li lithium|Be beryllium|B boron|C carbon|N nitrogen|O oxygen|F fluorine|
Ne neon|Na sodium|Mg magnesium|Al aluminium|Al aluminum|Si silicon|P phosphorus|S sulfur|
S sulphur|Cl chlorine|Ar argon|K potassium|Ca calcium|Sc scandium|Ti titanium|V vanadium|
Cr chromium|Mn manganese|Fe iron|Co cobalt|Ni nickel|Cu copper|Zn zinc|Ga gallium|
Ge germanium|As arsenic|Se selenium|Br bromine|Kr krypton|Rb rubidium|Sr strontium|Y yttrium|
Zr zirconium|Nb niobium|Mo molybdenum|Tc technetium|Ru ruthenium|Rh rhodium|Pd palladium|
Ag silver|Cd cadmium|In indium|Sn tin|Sb antimony|Te tellurium|I iodine|Xe xenon|Cs caesium|
Cs cesium|Ba barium|La lanthanum|Ce cerium|Pr praseodymium|Nd neodymium|Pm promethium|
Sm samarium|Eu europium|Gd gadolinium|Tb terbium|Dy dysprosium|Ho holmium|Er erbium|
Tm thulium|Yb ytterbium|Lu lutetium|Hf hafnium|Ta tantalum|W tungsten|Re rhenium|Os osmium|
Ir iridium|Pt platinum|Au gold|Hg mercury|Tl thallium|Pb lead|Bi bismuth|Po polonium|
At astatine|Rn radon|Fr francium|Ra radium|Ac actinium|Th thorium|Pa protactinium|U uranium|
Np neptunium|Pu plutonium|Am americium|Cm curium|Bk berkelium|Cf californium|
Es einsteinium|Fm fermium|Md mendelevium|No nobelium|Lr lawrencium|Rf rutherfordium|
Db dubnium|Sg seaborgium|Bh bohrium|Hs hassium|Mt meitnerium|Ds darmstadtium|
Rg roentgenium|Cn copernicium|Nh nihonium|Fl flerovium|Mc moscovium|Lv livermorium|
Ts tennessine|Og oganesson
"""
ELEMENT_SYMBOLS: dict[str, str] = {
    name: symbol for symbol, name in
    (item.strip().split(" ", 1) for item in _ELEMENTS.replace("\n", "").split("|"))
}
"""Element templates by name (``{{Carbon}}`` shows the linked symbol ``C`` in a formula)."""


def render_nuclide(r: _Renders, tpl: Template) -> str:
    """``{{nuclide2|Carbon|14}}`` -> ``14C`` (mass number, then the symbol, as the page's
    superscript reads as plain text); an unknown element -> ``None`` (reported)."""
    element, mass = arg(r, tpl, 1), arg(r, tpl, 2)
    symbol = ELEMENT_SYMBOLS.get(element.lower(), element if len(element) <= 3 else None)
    if not symbol:
        return None  # type: ignore[return-value]
    return f"{mass}{symbol}"


def render_old_style_date(r: _Renders, tpl: Template) -> str:
    """``{{OldStyleDate|2 February|1650|23 January}}`` -> ``2 February [O.S. 23 January]
    1650`` (the Gregorian date, the Julian one in brackets)."""
    day, year, old = arg(r, tpl, 1), arg(r, tpl, 2), arg(r, tpl, 3)
    return " ".join(x for x in (day, f"[O.S. {old}]" if old else "", year) if x)


def render_old_style_date_dy(r: _Renders, tpl: Template) -> str:
    """``{{OldStyleDateDY|9 February|1650|1649}}`` -> ``9 February 1650 [O.S. 9 February
    1649]`` (a different year in the old style)."""
    day, year, old_year = arg(r, tpl, 1), arg(r, tpl, 2), arg(r, tpl, 3)
    return f"{day} {year} [O.S. {day} {old_year}]" if old_year else f"{day} {year}".strip()


def render_old_style_date_ny(r: _Renders, tpl: Template) -> str:
    """``{{OldStyleDateNY|9 January|1650|30 December|1649}}`` -> ``9 January 1650 [O.S. 30
    December 1649]``."""
    day, year, old, old_year = (arg(r, tpl, i) for i in (1, 2, 3, 4))
    tail = " ".join(x for x in (old, old_year) if x)
    return f"{day} {year} [O.S. {tail}]" if tail else f"{day} {year}".strip()


GAUGES: dict[str, int] = {"sg": 1435, "ussg": 1435, "standard": 1435, "metre": 1000,
                          "meter": 1000, "cape": 1067, "russian": 1520, "irish": 1600,
                          "iberian": 1668, "indian": 1676}
"""RailGauge codes with a name: their width in millimetres."""


def render_rail_gauge(r: _Renders, tpl: Template) -> str:
    """``{{RailGauge|1435mm}}`` / ``{{RailGauge|sg}}`` -> ``1,435 mm``; ``{{RailGauge|42}}``
    (inches) -> ``3 ft 6 in``; ``{{RailGauge|3ft6in}}`` -> ``3 ft 6 in``. The converted value
    is not computed. A code not understood -> ``None`` (reported as unrecognised)."""
    code = "".join(arg(r, tpl, 1).lower().split())
    if code in GAUGES:
        return f"{GAUGES[code]:,} mm"
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(mm|cm|m)?", code)
    if m and (m.group(2) or float(m.group(1)) >= 100):
        return f"{group_thousands(m.group(1))} {m.group(2) or 'mm'}"
    if m:  # a plain number below 100: inches
        inches = float(m.group(1))
        feet, rest = divmod(inches, 12)
        rest_s = f"{rest:g}"
        return f"{int(feet)} ft {rest_s} in" if feet else f"{rest_s} in"
    m = re.fullmatch(r"(\d+)ft(?:(\d+(?:\.\d+)?|\d+[⁄/]\d+)(?:in)?)?", code)
    if m:
        return f"{m.group(1)} ft {m.group(2)} in" if m.group(2) else f"{m.group(1)} ft"
    return None  # type: ignore[return-value]


def render_hlist(r: _Renders, tpl: Template) -> str:
    """``{{hlist|a|b|c}}`` -> ``a · b · c`` (every item kept, separated as the page shows)."""
    return " · ".join(x for x in args(r, tpl) if x)


def render_item_list(r: _Renders, tpl: Template) -> str:
    """``{{ubl|a|b}}`` (``unbulleted list``, ``bulleted list``, ``plainlist`` with items as
    arguments) -> ``a; b``: every item kept, separated."""
    return "; ".join(x for x in args(r, tpl) if x)


SHIP_PREFIXES = frozenset({
    "uss", "hms", "hmas", "hmcs", "hmnzs", "hmhs", "hmt", "hmy", "rms", "ss", "sms", "usns",
    "uscgc", "usat", "usrc", "hnlms", "hnoms", "hdms", "hswms", "ins", "jds", "js", "mv",
    "ms", "ns", "rv", "sv", "ps", "hsc", "fs", "ors", "ars", "bap", "ics", "kri", "rfs",
    "rss", "sas", "tcg", "tss", "ts", "ussr", "cs", "css", "nrp", "brp", "ccgs", "rmas", "gs",
    "hr. ms.",
})
"""Ship-prefix templates: ``{{USS|Hornet|CV-12}}`` -> ``USS Hornet (CV-12)``."""


def _ship(prefix: str, name: str, ident: str, display: str) -> str:
    bits = int(display) if display.isdigit() else 7
    out = []
    if bits & 4 and prefix:
        out.append(prefix)
    if bits & 2 and name:
        out.append(name)
    if bits & 1 and ident:
        out.append(f"({ident})" if out else ident)
    return " ".join(out)


def render_ship(r: _Renders, tpl: Template) -> str:
    """``{{ship|HMS|Dreadnought|1906}}`` -> ``HMS Dreadnought (1906)``."""
    a = args(r, tpl) + ["", "", "", ""]
    return _ship(a[0], a[1], a[2], a[3])


def render_ship_prefix(prefix: str) -> Renderer:
    def render(r: _Renders, tpl: Template) -> str:
        a = args(r, tpl) + ["", "", ""]
        return _ship(prefix, a[0], a[1], a[2])

    return render


def render_sclass(r: _Renders, tpl: Template) -> str:
    """``{{sclass|Iowa|battleship}}`` -> ``Iowa-class battleship``."""
    name, kind = arg(r, tpl, 1), arg(r, tpl, 2)
    return f"{name}-class {kind}".strip() if name else ""


def render_sic(r: _Renders, tpl: Template) -> str:
    """``{{sic}}`` -> ``[sic]``; ``{{sic|word}}`` -> ``word [sic]``; ``hide=y`` shows the word."""
    word = "".join(args(r, tpl))
    if _yes(named(r, tpl, "hide")):
        return word
    return f"{word} [sic]" if word else "[sic]"


def render_harvtxt(r: _Renders, tpl: Template) -> str:
    """``{{harvtxt|Smith|Jones|2001}}`` -> ``Smith & Jones (2001)`` (an in-text citation)."""
    a = [x for x in args(r, tpl) if x]
    if not a:
        return ""
    year = a[-1] if re.search(r"\d{3,4}[a-z]?$|^n\.d\.$", a[-1]) else ""
    names = a[:-1] if year else a
    if len(names) > 3:
        who = f"{names[0]} et al."
    elif len(names) == 3:
        who = f"{names[0]}, {names[1]} & {names[2]}"
    else:
        who = " & ".join(names)
    return f"{who} ({year})" if year else who


def render_quote(r: _Renders, tpl: Template) -> str:
    for key in ("text", "quote", "1"):
        if tpl.has(key):
            return "\n\n" + r.render(tpl.get(key).value) + "\n\n"
    return ""


def render_block_arg(r: _Renders, tpl: Template) -> str:
    """A layout wrapper around block content (``{{columns-list|colwidth=30em|…}}``, older
    ``{{columns-list|2|…}}``): the content (the last positional argument) as blocks."""
    pos = positional(tpl)
    content = named(r, tpl, "content") or (r.render(pos[-1].value) if pos else "")
    if len(pos) == 1 and content.strip().isdigit():
        return ""
    return "\n\n" + content + "\n\n" if content.strip() else ""


def render_music(r: _Renders, tpl: Template) -> str:
    symbols = {"flat": "♭", "b": "♭", "sharp": "♯", "#": "♯", "natural": "♮"}
    first = arg(r, tpl, 1)
    return symbols.get(first.lower(), first)


def render_spaces(r: _Renders, tpl: Template) -> str:
    return " "


def render_bibleref(r: _Renders, tpl: Template) -> str:
    """``{{bibleref|Mark|3:25|9}}`` -> ``Mark 3:25`` (the version argument is not shown)."""
    return " ".join(x for x in (arg(r, tpl, 1), arg(r, tpl, 2)) if x)


def render_us_patent(r: _Renders, tpl: Template) -> str:
    return f"U.S. Patent {group_thousands(arg(r, tpl, 1))}".strip()


def render_circa(short: str) -> Renderer:
    return lambda r, tpl: f"{short} {arg(r, tpl, 1)}".strip()


def render_as_of(r: _Renders, tpl: Template) -> str:
    """``{{as of|2015|6|30}}`` -> ``As of 30 June 2015`` (``df=US``: ``June 30, 2015``);
    ``lc=y`` lower-cases *as*; the month may be a number or a name."""
    year, month = arg(r, tpl, 1), arg(r, tpl, 2)
    word = "as of" if _yes(named(r, tpl, "lc")) else "As of"
    names = [m.lower() for m in MONTHS]
    if month.lower() in names:
        month = str(names.index(month.lower()) + 1)
    if month.isdigit() and 1 <= int(month) <= 12:
        day = arg(r, tpl, 3)
        if day.isdigit() and year.isdigit() and 1 <= int(day) <= 31:
            us = named(r, tpl, "df").lower() == "us"
            return f"{word} {format_date(int(year), int(month), int(day), not us)}"
        return f"{word} {MONTHS[int(month) - 1]} {year}"
    return f"{word} {year}".strip()


def render_currency(symbol: str) -> Renderer:
    return lambda r, tpl: f"{symbol}{arg(r, tpl, 1)}"


def render_ill(r: _Renders, tpl: Template) -> str:
    """``{{ill|Target|de|…|lt=label}}``: the label, else the target; the older
    ``{{ill|de|Target|…}}`` form (language code first) shows its second argument."""
    first = arg(r, tpl, 1)
    if re.fullmatch(r"[a-z]{2,3}(?:-[a-z]+)?", first) and arg(r, tpl, 2):
        return named(r, tpl, "lt") or arg(r, tpl, 2)
    return named(r, tpl, "lt") or first


def render_ipa_x(r: _Renders, tpl: Template) -> str:
    """``{{IPA-de|ˈbɛʁlɪn}}`` -> ``[ˈbɛʁlɪn]`` (the label such as "German pronunciation:" is
    not shown)."""
    text = arg(r, tpl, 1)
    return f"[{text}]" if text else ""


# --------------------------------------------------------------------------------------------
# the table

RENDERERS: dict[str, Renderer] = {
    "convert": render_convert,
    "cvt": lambda r, tpl: render_convert(r, tpl, abbreviate=True),
    "val": render_val, "e": render_e, "10^": render_power_of_ten, "x10^": render_e,
    "frac": render_frac, "sfrac": render_frac, "fraction": render_frac, "fract": render_frac,
    "nts": render_formatted_number, "formatnum": render_formatted_number,
    "birth date": render_date, "death date": render_date, "start date": render_date,
    "end date": render_date, "birth date and age": render_date, "dob": render_date,
    "start date and age": render_date, "start date and years ago": render_date,
    "end date and age": render_date, "bda": render_date, "dts": render_date,
    "date table sorting": render_date, "film date": render_date,
    "death date and age": lambda r, tpl: render_date(r, tpl, aged=True),
    "dda": lambda r, tpl: render_date(r, tpl, aged=True),
    "birth year and age": render_year, "death year and age": render_year,
    "birth-date": render_date,
    "transl": render_transl, "transliteration": render_transl, "translit": render_transl,
    "nihongo": render_nihongo, "ipac-en": render_ipac, "respell": render_respell,
    "chem": render_chem, "chemf": render_chem, "chem2": render_chem2, "ce": render_chem2,
    "ship": render_ship, "sclass": render_sclass, "sclass-": render_sclass,
    "sclass2": render_sclass, "sic": render_sic, "harvtxt": render_harvtxt,
    "columns-list": render_block_arg, "col-list": render_block_arg,
    "music": render_music, "spaces": render_spaces, "bibleref": render_bibleref,
    "bibleverse": render_bibleref, "us patent": render_us_patent,
    "as of": render_as_of, "us$": render_currency("US$"), "usd": render_currency("US$"),
    "gbp": render_currency("£"), "£": render_currency("£"), "€": render_currency("€"),
    "ill": render_ill, "interlanguage link": render_ill,
    "nuclide": render_nuclide, "nuclide2": render_nuclide,
    "oldstyledate": render_old_style_date, "old style date": render_old_style_date,
    "oldstyledatedy": render_old_style_date_dy, "oldstyledateny": render_old_style_date_ny,
    "railgauge": render_rail_gauge, "rail gauge": render_rail_gauge,
    "hlist": render_hlist, "flatlist": render_block_arg, "plainlist": render_block_arg,
    "ubl": render_item_list, "unbulleted list": render_item_list,
    "bulleted list": render_item_list, "blist": render_item_list,
}
for _name, _symbol in ELEMENT_SYMBOLS.items():
    RENDERERS.setdefault(_name, lambda r, tpl, _symbol=_symbol: _symbol)
for _name in QUOTES:
    RENDERERS[_name] = render_quote
for _code, _country in COUNTRY_FLAGS.items():
    RENDERERS.setdefault(_code.lower(), lambda r, tpl, _country=_country: _country)
for _name, _i in ONE_ARG.items():
    RENDERERS.setdefault(_name, _one_arg(_i))
for _name, _text in LITERALS.items():
    RENDERERS.setdefault(_name, lambda r, tpl, _text=_text: _text)
for _prefix in SHIP_PREFIXES:
    RENDERERS.setdefault(_prefix, render_ship_prefix(_prefix.upper() if _prefix != "hr. ms."
                                                     else "Hr.Ms."))
for _short, _names in (("c.", ("c.", "circa", "ca.")), ("fl.", ("fl.", "floruit")),
                       ("r.", ("r.", "reign")), ("d.", ("d.",)), ("b.", ("b.",))):
    for _name in _names:
        RENDERERS.setdefault(_name, render_circa(_short))


DROPPED: frozenset[str] = frozenset({
    # references and footnotes (their text is dropped with <ref>)
    "sfn", "sfnp", "sfnm", "sfnref", "harv", "harvnb", "harvp", "rp", "r", "efn", "efn-ua",
    "efn-lr", "refn", "citation", "ref label", "note label", "reflist", "refbegin", "refend",
    "notelist", "bibleref2", "oclc", "isbn", "doi", "page needed", "pages needed",
    # inline maintenance tags
    "citation needed", "cn", "fact", "clarify", "when", "which", "who", "whom", "by whom",
    "according to whom", "dubious", "vague", "better source", "verify source",
    "unreliable source?", "weasel-inline", "update", "update after", "qualify evidence",
    "where", "specify", "failed verification", "original research inline", "or",
    "citation needed span", "disputed-inline", "peacock term", "nonspecific",
    "full citation needed",
    "dead link", "self-published inline", "technical reasons", "undue weight section",
    "lead rewrite", "more footnotes", "refimprove", "refimprove section", "unreferenced",
    "unreferenced section", "expand section", "mergefrom", "merge from", "merge to", "cleanup",
    "disambiguation", "technical", "contains special characters", "latin letter info",
    # page-level switches
    "use dmy dates", "use mdy dates", "use british english", "use american english",
    "use canadian english", "use australian english", "use indian english",
    "use oxford spelling", "engvar", "good article", "featured article", "italic title",
    "toc limit", "toc", "bots", "short description", "pp", "pp-move-indef", "pp-semi-indef",
    "pp-pc1", "pp-protected", "pp-move", "pp-semi", "pp-vandalism", "pp-semi-protected",
    "pp-dispute", "pp-sock", "pp-extended", "dmy", "mdy", "featured list", "authority control",
    "coord missing", "defaultsort",
    # hatnotes and navigation
    "main", "see also", "further", "further information", "about", "redirect", "redirect2",
    "redirect3", "redirect-distinguish", "other uses", "other uses of", "for", "for2",
    "distinguish", "distinguish2", "details", "details3", "hatnote", "main category",
    "broader", "also", "selfref", "portal", "portal bar", "wikisource", "wikinews",
    "wiktionary", "commons", "commons category", "commonscat", "wikiquote", "wikibooks",
    "wikiversity", "sister project links", "listen", "spoken wikipedia", "elect",
    "related articles", "anchor", "anchors", "gutenberg author", "youtube", "imdb name",
    "imdb title", "official website", "webarchive", "cite check",
    # layout, columns, images, charts and tables drawn by templates
    "col-begin", "col-end", "col-break", "col-2", "col-3", "col-4", "col-5", "colbegin",
    "colend", "col-begin-small", "div col", "div col end", "columns", "multiple image",
    "multiple images", "double image", "wide image", "css image crop", "image frame",
    "chart", "chart top", "chart bottom", "chart/start", "chart/end", "bar box", "bar chart",
    "clade", "stack", "stack begin", "stack end", "flagicon", "flag icon",
    "dentalformula", "weather box", "historical populations", "us census population",
    "ordered list", "algorithm-begin", "algorithm-end", "legend-line", "image label",
    "image label begin", "image label end", "center block", "static row numbers",
    "sort", "ntsh", "hs", "sortname", "tooltip2", "bq", "charmap", "letter other reps",
    "abortionlawsmap", "paraphyletic group",
    # values computed from data an export lacks, or from the build's date
    "age", "inflation", "inflation-fn", "inflation-year", "currentyear", "current year",
    "pop density", "format price", "to usd", "formatprice",
    # coordinates (shown beside the title, not in the text)
    "coord",
    # magic words seen as templates
    "pagename", "fullpagename",
})
"""Templates that show no article text: dropped by rule (counted as *dropped*)."""

_DROPPED_PREFIXES = ("infobox", "navbox", "campaignbox", "cite ", "citation/", "pp-",
                     "s-", "succession", "taxobox", "speciesbox", "automatic taxobox",
                     "use ", "sfn", "harv", "portal", "navseasoncats", "collapsible list",
                     "ipa audio", "audio")
_DROPPED_SUFFIXES = (" sidebar", " navbox", " footer", " needed", " stub", " topics",
                     " series")


def template_rule(name: str) -> str | None:
    """``"render"``, ``"drop"`` or ``None`` (not in the table) for a template name."""
    if name in RENDERERS or name.startswith(("lang-", "ipa-")):
        return "render"
    if name in DROPPED or name.startswith(_DROPPED_PREFIXES) \
            or name.endswith(_DROPPED_SUFFIXES):
        return "drop"
    return None


def renderer_for(name: str) -> Renderer | None:
    """The renderer of a template name (``None``: no text)."""
    found = RENDERERS.get(name)
    if found is not None:
        return found
    if name.startswith("lang-"):
        return render_lang_x(name[5:])
    if name.startswith("ipa-"):
        return render_ipa_x
    return None
