"""A generated long-conversation corpus for retrieval quality (LongMemEval-style haystacks).

Each conversation is one user's dated chat sessions with an assistant (dozens of them, 600-1,500
tokens each, three to six topics per session). Personal facts are buried at random places in
random sessions; questions paraphrase one or two facts, some naming a rare term from the fact
(a name, a product), some only describing it. Other sessions talk about the same topics
(other dogs, other trips, other mechanics), so neither keywords nor meaning alone is enough.
Deterministic for a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

_RAW_POOLS = {
    "name": "Priya|Marco|Sven|Aiko|Tomasz|Leila|Oskar|Ines|Kwame|Rosa|Dmitri|Hana"
    "|Felix|Nadia|Joaquin|Mirela|Bastian|Yusuf|Greta|Anouk",
    "city": "Lisbon|Porto|Krakow|Valencia|Ghent|Tallinn|Bergen|Lyon|Bologna|Graz"
    "|Malmo|Cork|Seville|Utrecht|Brno|Turku",
    "breed": "beagle|corgi|dachshund|whippet|labrador|samoyed|vizsla|basenji",
    "pet": "Biscuit|Pickles|Mochi|Waffles|Juniper|Pepper|Nacho|Clementine",
    "allergen": "shellfish|peanuts|sesame|kiwi|mustard|celery",
    "month": "January|February|March|April|May|June|July|August|September|October",
    "instrument": "cello|ukulele|trumpet|banjo|clarinet|harp",
    "amount": "1,850|2,300|4,700|920|12,000|35,000|640",
    "garage": "Hoffmann Motors|Quickfix Autos|Bayside Garage|Redline Repairs",
    "restaurant": "Saffron Lane|The Copper Pot|Kintsugi|Osteria Lupa|Casa Verde",
    "cuisine": "Ethiopian|Georgian|Peruvian|Sichuan|Lebanese|Basque",
    "tool": "GitHub Actions|Buildkite|CircleCI|Drone|GitLab CI",
    "sport": "hockey|volleyball|water polo|netball|lacrosse",
    "book": "The Glass Orchard|Salt and Signal|A Map of Small Rivers|The Ninth Lantern",
    "plant": "lavender|hydrangeas|blueberry bushes|sunflowers|rosemary",
    "cert": "AWS Solutions Architect|CISSP|PMP|Kubernetes CKA|Azure Fundamentals",
    "item": "Eero|Netgear Orbi|TP-Link Deco|Google Nest Wifi",
    "dish": "moussaka|pierogi|goulash|paella|biryani",
    "secret": "smoked paprika|a spoon of honey|star anise|brown butter|pickled lemon",
    "project": "Falcon|Atlas|Nimbus|Harbor|Lumen|Quartz",
    "vendor": "Vantix|Orbis|Cobalt|Syncrate|Meridio",
    "org": "Westside|Riverbend|St. Albans|Northgate",
    "weekday": "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday",
    "laptop": "ThinkPad X1|MacBook Pro|Framework 13|Dell XPS 15",
    "podcast": "Hidden Brain|Acquired|Radiolab|Darknet Diaries|99% Invisible",
}
POOLS = {key: value.split("|") for key, value in _RAW_POOLS.items()}

# (statement the user makes, question naming a rare term, question that only paraphrases)
FACTS: list[tuple[str, str, str]] = [
    (
        "Oh, news: we finally adopted a {breed} puppy from the shelter and named her {pet}.",
        "What breed is {pet}?",
        "What kind of dog did we bring home from the rescue?",
    ),
    (
        "My sister {name} just moved to {city} for a job at a solar startup.",
        "Why did {name} relocate to {city}?",
        "Which place did my sibling relocate to for work?",
    ),
    (
        "The allergist confirmed I'm allergic to {allergen}, so I'm checking every label now.",
        "What did the allergist say about {allergen}?",
        "Which food does my body react badly to?",
    ),
    (
        "I signed up for the {city} half marathon in {month}, my first one ever.",
        "When is the {city} half marathon?",
        "Which long-distance running race did I register for?",
    ),
    (
        "I started {instrument} lessons with a teacher called {name} every {weekday}.",
        "Who teaches me {instrument}?",
        "Who gives me my weekly music lessons?",
    ),
    (
        "The car's transmission died and {garage} quoted {amount} dollars to fix it.",
        "How much did {garage} want for the transmission?",
        "What was the repair estimate for my vehicle?",
    ),
    (
        "For our anniversary we booked {restaurant}, the {cuisine} place by the canal.",
        "When are we going to {restaurant}?",
        "Where are my partner and I celebrating the special date?",
    ),
    (
        "At work I moved our builds from Jenkins to {tool} and they got twice as fast.",
        "Why did I switch to {tool}?",
        "What did I change to speed up our compile pipeline?",
    ),
    (
        "My daughter scored the winning goal in her {sport} final on Saturday!",
        "How did the {sport} final go?",
        "How did my kid's championship game turn out?",
    ),
    (
        "Our book club picked {book}; we meet on the last {weekday} of the month.",
        "When does the club meet to discuss {book}?",
        "Which novel is my reading group on right now?",
    ),
    (
        "We planted {plant} along the back fence; the nursery said they need full sun.",
        "What did the nursery say about the {plant}?",
        "What did we put in the garden by the fence?",
    ),
    (
        "I'm studying for the {cert} exam, which is scheduled for {month}.",
        "When is my {cert} exam?",
        "When do I sit my professional certification test?",
    ),
    (
        "The wifi kept dropping, so I bought a {item} mesh system for the flat.",
        "Did the {item} help?",
        "What did I buy to fix the flaky internet at home?",
    ),
    (
        "We're saving {amount} dollars for the deposit on a house by {month} next year.",
        "How much is the deposit we are saving for?",
        "How much money are we putting aside to buy a home?",
    ),
    (
        "Grandma's {dish} is special because she adds {secret} at the very end.",
        "What does grandma put in her {dish}?",
        "What's the secret in my nan's family recipe?",
    ),
    (
        "The {project} launch slipped to {month} because {vendor} delivered the hardware late.",
        "Why did {project} slip?",
        "What delayed the launch of our product at work?",
    ),
    (
        "I volunteer at the {org} food bank every {weekday} afternoon now.",
        "When do I help at the {org} food bank?",
        "Where do I do charity work each week?",
    ),
    (
        "I finally replaced my old laptop with a {laptop}; the battery lasts all day.",
        "How is the {laptop} working out?",
        "Which new computer did I get?",
    ),
    (
        "My favourite podcast lately is {podcast}; the episode on memory blew my mind.",
        "Which {podcast} episode did I like?",
        "What audio show have I been hooked on recently?",
    ),
    (
        "I sprained my ankle playing {sport} and the physio said six weeks of rest.",
        "How long will the ankle from {sport} take to heal?",
        "What did the therapist say about my injury recovery?",
    ),
]

# chit-chat: topic -> (user lines, assistant lines); {x} slots come from POOLS
TOPICS: dict[str, tuple[list[str], list[str]]] = {
    "cooking": (
        [
            "I tried making {dish} last night but it came out a bit dry.",
            "Any idea what to cook for six people on a budget?",
            "My friend swears by {cuisine} food, I should try a restaurant.",
            "How long should I rest dough before rolling it out?",
        ],
        [
            "Resting dough for thirty minutes relaxes the gluten, so it rolls out without"
            " shrinking back. Cover it so the surface does not dry out.",
            "For a crowd, a big tray bake or a pot of stew stretches well; beans and lentils keep"
            " the cost down and they reheat nicely the next day.",
            "Dryness usually means too much heat for too long. Try a lower oven and check it ten"
            " minutes earlier than the recipe says.",
        ],
    ),
    "travel": (
        [
            "Thinking about a weekend in {city}, is it worth it in {month}?",
            "My colleague just got back from {city} and loved the food.",
            "Trains or flights for a short trip, what do you think?",
            "I always overpack. Any tips for carry-on only?",
        ],
        [
            "Trains win for short distances: no security queues, city centre to city centre, and"
            " you can work on the way. Book early for the cheaper fares.",
            "Roll clothes, pick one colour palette so everything matches, and wear the bulkiest"
            " shoes on the journey. A small packing cube helps a lot.",
            "Shoulder season is often the sweet spot: fewer crowds, lower prices, and the weather"
            " is usually mild enough for walking tours.",
        ],
    ),
    "work": (
        [
            "Long day. Three meetings that could have been emails.",
            "My manager wants a roadmap for next quarter by Friday.",
            "Our team is debating microservices again, it never ends.",
            "I need to give feedback to a junior engineer, how do I keep it kind?",
        ],
        [
            "Be specific about the behaviour, explain the impact, and ask how they see it. Keep"
            " it private, timely, and pair it with something they did well.",
            "For a roadmap, start with the outcomes you want, then the bets that move them, and"
            " keep a short list of what you are explicitly not doing.",
            "Try proposing an async update format; meetings shrink when status moves to writing.",
        ],
    ),
    "fitness": (
        [
            "Went for a run this morning, legs are sore.",
            "Should I stretch before or after lifting?",
            "My gym is so crowded at six, I might switch to mornings.",
            "I keep skipping leg day, honestly.",
        ],
        [
            "Dynamic warm-ups before, static stretching after. Soreness a day or two later is"
            " normal; gentle movement helps more than complete rest.",
            "Consistency beats intensity. Three short sessions a week you actually do are better"
            " than a perfect plan you skip.",
        ],
    ),
    "pets": (
        [
            "My neighbour's dog barked all night again.",
            "Is it normal for a cat to sleep eighteen hours a day?",
            "A friend's {breed} keeps chewing shoes, any advice I can pass on?",
        ],
        [
            "Puppies chew when they are teething or bored; swap the shoe for a toy and praise"
            " them when they pick the toy. Plenty of walks helps.",
            "Cats do sleep a lot, twelve to sixteen hours is typical and more for older ones.",
        ],
    ),
    "tech": (
        [
            "My phone battery drains by lunchtime, no idea why.",
            "Should I move my photos to a cloud service?",
            "The printer at the office is broken again.",
            "Is a mechanical keyboard worth it for typing all day?",
        ],
        [
            "Check which apps use background refresh and location; those are the usual culprits."
            " Lowering screen brightness also helps more than people expect.",
            "A cloud backup plus one local copy is a good rule; test a restore once so you know"
            " it actually works.",
        ],
    ),
    "home": (
        [
            "The kitchen tap is dripping, should I call a plumber?",
            "We're thinking about painting the living room a darker colour.",
            "Our landlord still hasn't fixed the heating.",
            "I spent the weekend assembling flat-pack furniture.",
        ],
        [
            "A dripping tap is usually a worn washer or cartridge, a cheap fix if you turn off the"
            " water first and take a photo before taking it apart.",
            "Dark walls can feel cosy in a room with good light; try a large sample patch and look"
            " at it in the morning and evening before committing.",
        ],
    ),
    "media": (
        [
            "Just finished a great documentary about deep sea creatures.",
            "Can you recommend a mystery novel that isn't too gory?",
            "I've been listening to a lot of jazz while working.",
            "We watched a terrible film on Friday, but it was fun.",
        ],
        [
            "Cosy mysteries might suit you: clever plots, little gore, and a strong sense of"
            " place. Classic golden-age authors are a good start.",
            "Instrumental music is great for focus; lyrics compete with the words you are reading"
            " or writing.",
        ],
    ),
    "money": (
        [
            "I should really start budgeting properly.",
            "Is it better to pay off the credit card or save first?",
            "Prices at the supermarket are wild lately.",
        ],
        [
            "Pay off high-interest debt first, but keep a small emergency fund so one surprise"
            " bill does not push you back onto the card.",
            "Track every expense for one month without judging it; the categories that surprise"
            " you are where the budget will make a difference.",
        ],
    ),
}


@dataclass
class Question:
    text: str
    relevant: list[int]  # session numbers within the conversation
    kind: str = "para"  # "rare" (names a rare term of the fact), "para", "two" (two facts)
    #: the turns that state the answer: (session number, the turn's text as it stands in the
    #: session; a turn merged into a longer line is a part of that line)
    evidence: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class Conversation:
    name: str
    sessions: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    dates: list[datetime] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def _fill(template: str, rng: random.Random, slots: dict[str, str]) -> str:
    out = template
    while "{" in out:
        key = out[out.index("{") + 1 : out.index("}")]
        value = slots.setdefault(key, rng.choice(POOLS[key]))
        out = out.replace("{" + key + "}", value)
    return out


def _topic_turns(topic: str, rng: random.Random) -> list[str]:
    users, assistants = TOPICS[topic]
    turns = []
    for _ in range(rng.randint(2, 4)):
        turns.append("User: " + _fill(rng.choice(users), rng, {}))
        reply = " ".join(rng.sample(assistants, k=min(len(assistants), rng.randint(1, 2))))
        turns.append("Assistant: " + _fill(reply, rng, {}))
    return turns


def conversation(name: str, sessions: int, facts: int, rng: random.Random) -> Conversation:
    conv = Conversation(name)
    start = datetime(2024, 1, 8, 18, 0, tzinfo=UTC) + timedelta(days=rng.randint(0, 60))
    bodies: list[list[str]] = []
    for i in range(sessions):
        topics = rng.sample(sorted(TOPICS), k=rng.randint(3, 5))
        turns = [t for topic in topics for t in _topic_turns(topic, rng)]
        while len(" ".join(turns).split()) < rng.randint(480, 1000):
            turns += _topic_turns(rng.choice(topics), rng)
        bodies.append(turns)
        conv.titles.append("Chat about " + ", ".join(topics))
        conv.dates.append(start + timedelta(days=3 * i, minutes=rng.randint(0, 600)))
    planted: list[tuple[int, str, str]] = []  # (session, paraphrase question, evidence turn)
    for template in rng.sample(FACTS, k=min(facts, len(FACTS))):
        statement, q_rare, q_para = template
        slots: dict[str, str] = {}
        where = rng.randrange(sessions)
        turns = bodies[where]
        at = rng.randrange(0, len(turns) + 1, 2)  # before a user turn
        said = "User: " + _fill(statement, rng, slots)
        turns[at:at] = [said, "Assistant: Noted, thanks!"]
        rare = rng.random() < 0.4
        q = _fill(q_rare if rare else q_para, rng, slots)
        kind = "rare" if rare else "para"
        conv.questions.append(Question(q, [where], kind, [(where, said)]))
        planted.append((where, _fill(q_para, rng, slots), said))
    for _ in range(len(planted) // 4):  # questions about two facts at once
        (s1, q1, e1), (s2, q2, e2) = rng.sample(planted, 2)
        if s1 != s2:
            text = f"{q1} And {q2[0].lower()}{q2[1:]}"
            conv.questions.append(Question(text, [s1, s2], "two", [(s1, e1), (s2, e2)]))
    conv.sessions = ["\n".join(b) for b in bodies]
    return conv


def corpus(conversations: int, sessions: int, facts: int, seed: int = 7) -> list[Conversation]:
    rng = random.Random(seed)
    return [conversation(f"conv-{c:02d}", sessions, facts, rng) for c in range(conversations)]
