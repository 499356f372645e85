"""Fact types for tests/bench/conversations.py: what friends tell each other, once, in passing.

A fact type has slot pools (concrete nouns, unique within a conversation for the `key` slot),
first-person statements the owner makes in an ordinary turn, the friend's follow-ups, the
owner's elaboration (no key noun), later callbacks from the friend (name the key noun again, no
new information: realistic keyword distractors), and question templates: `ask` (single-hop,
some name the key noun, some only describe it), `when` (temporal), `many` (multi-hop over the
owner's facts of this type). `group` ties types together for inference questions.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FactType:
    name: str
    group: str
    key: str
    slots: dict[str, list[str]]
    say: list[str]
    follow: list[str]
    more: list[str]
    callback: list[tuple[str, str]]
    ask: list[str]
    when: list[str] = field(default_factory=list)
    many: list[str] = field(default_factory=list)
    most: int = 1  # instances per person at most


def _p(raw: str) -> list[str]:
    return [x.strip() for x in raw.split("|")]


TYPES: list[FactType] = [
    FactType(
        "pet",
        "animals",
        "petname",
        {
            "petname": _p(
                "Biscuit|Pickles|Mochi|Waffles|Juniper|Pepper|Nacho|Clementine|Oreo|Ziggy"
                "|Pumpkin|Rocket|Maple|Olive|Bandit|Noodle|Tofu|Gizmo|Marble|Sprout"
            ),
            "species": _p(
                "puppy|kitten|rabbit|parrot|guinea pig|gecko|corgi|tabby cat|beagle"
                "|husky|cockatiel|tortoise"
            ),
            "origin": _p(
                "the Riverside shelter|a rescue two towns over|a farm upstate"
                "|a neighbour whose dog had a litter|the county animal shelter"
                "|a coworker who was moving abroad"
            ),
        },
        [
            "Oh, big news on our end: we adopted a {species} from {origin} and named it {petname}!",
            "So we have a new family member, a little {species} called {petname}. Got it from"
            " {origin}.",
            "I caved and brought home a {species}. {petname} came from {origin} and already owns"
            " the couch.",
            "Meet {petname}! [shares a photo of a {species} curled up on a blanket] We picked it"
            " up from {origin} on Saturday.",
        ],
        [
            "Stop it, that's adorable! How is {petname} settling in?",
            "Aww a {species}! Is it house trained yet?",
            "No way, congrats! Who came up with the name?",
            "Omg. I need to meet {petname} asap.",
        ],
        [
            "It's a lot of work honestly, the first nights were rough, but the kids are obsessed.",
            "Settling in slowly. It sleeps at the foot of the bed and steals socks.",
            "The name was my son's idea, we argued about it for like a week lol.",
            "Vet says healthy, just needs a few more shots. I already bought way too many toys.",
        ],
        [
            ("How's {petname} doing?", "{petname} is great, getting spoiled by everyone as usual."),
            ("Give {petname} a scratch from me!", "Will do, {petname} says hi back haha."),
        ],
        [
            "What is the name of {p}'s {species}?",
            "What kind of animal is {petname}?",
            "Where did {p} get {petname} from?",
            "What did {p} name the new pet?",
        ],
        ["When did {p} adopt {petname}?"],
        ["What pets does {p} have?", "What are the names of {p}'s pets?"],
        2,
    ),
    FactType(
        "instrument",
        "music",
        "instrument",
        {
            "instrument": _p(
                "violin|cello|ukulele|clarinet|saxophone|drums|banjo|flute|trumpet"
                "|harp|accordion|mandolin"
            ),
            "since": _p(
                "since college|for about six months|since I was a kid|for two years now"
                "|since the pandemic"
            ),
        },
        [
            "I've been playing the {instrument} {since}, it's my way to switch off after work.",
            "Honestly the {instrument} keeps me sane, I've been at it {since}.",
            "Practising the {instrument} every evening lately, been playing {since} but I got"
            " serious again.",
            "[shares a photo of a {instrument} leaning on a music stand] My corner of the living"
            " room, been playing {since}.",
        ],
        [
            "That's so cool, I can't play anything. Do you play for people?",
            "You play the {instrument}? Since when?!",
            "I'd love to hear you play sometime.",
            "Wow, is it hard to learn?",
        ],
        [
            "Mostly just for me, but I did a little open mic once and nearly fainted.",
            "It's hard at first, your fingers hurt, but then it just clicks.",
            "I play along with old records, it's the best part of my day.",
        ],
        [("Still practising the {instrument}?", "Every night, the neighbours must love me haha.")],
        [
            "What instrument does {p} play?",
            "How long has {p} been playing the {instrument}?",
            "What does {p} do to unwind after work?",
        ],
        [],
        [],
        1,
    ),
    FactType(
        "concert",
        "music",
        "band",
        {
            "band": _p(
                "Florence and the Machine|Tame Impala|Hozier|Vampire Weekend|Bon Iver"
                "|Phoebe Bridgers|Arcade Fire|Khruangbin|Mumford and Sons|Lizzo|Fleet Foxes"
                "|The National|Maggie Rogers|Leon Bridges"
            ),
            "venue": _p(
                "the Greek Theatre|Red Rocks|the Fillmore|a tiny club downtown"
                "|the county fairgrounds|the Hollywood Bowl|an old theatre in Oakland"
            ),
        },
        [
            "We saw {band} live at {venue} last night and I'm still buzzing.",
            "Went to the {band} show at {venue} on Friday, easily the best concert of my life.",
            "[shares a photo of a stage lit up in purple] {band} at {venue}! I lost my voice"
            " singing along.",
            "Finally got to see {band}, they played {venue} and I cried during the encore, no"
            " shame.",
        ],
        [
            "Jealous!! What did they open with?",
            "Omg {band}! Was it packed?",
            "That sounds unreal. Who did you go with?",
        ],
        [
            "Packed, we were squished near the front but worth it.",
            "Went with my sister, we've wanted to go for years.",
            "Music just hits different live, you know? I want to go to more shows.",
        ],
        [("Still listening to {band} on repeat?", "Obviously, I can't stop haha.")],
        [
            "Which band did {p} see at {venue}?",
            "Where did {p} see {band} perform?",
            "What concert did {p} go to?",
        ],
        ["When did {p} see {band} live?"],
        ["Which concerts has {p} been to?"],
        2,
    ),
    FactType(
        "camping",
        "outdoors",
        "place",
        {
            "place": _p(
                "Lake Tahoe|Yosemite|Big Sur|Joshua Tree|Zion|the Smoky Mountains"
                "|Mount Rainier|Acadia|Olympic National Park|Shenandoah|Glacier National Park"
                "|the Redwoods|Crater Lake|the Grand Tetons"
            ),
            "company": _p(
                "the kids|a few college friends|the hiking club|the cousins"
                "|an old roommate|some coworkers|the neighbours"
            ),
        },
        [
            "We finally went camping at {place} with {company} last weekend, it was perfect.",
            "Just got back from a camping trip to {place} with {company}. No signal for three"
            " days!",
            "[shares a photo of a tent by a lake at dusk] {place}, with {company}. Best trip in"
            " ages.",
            "Spent the long weekend camping in {place} with {company}, we hiked every single day.",
        ],
        [
            "Sounds amazing, how was the weather?",
            "Ahh I love camping! Did you see any wildlife?",
            "Was that your first time there?",
            "That photo is gorgeous.",
        ],
        [
            "Cold at night but so clear, we saw the milky way.",
            "We saw a deer right by the campsite in the morning, everyone freaked out.",
            "Being outdoors just resets my brain, I'm already planning the next one.",
        ],
        [("Any more trips like {place} planned?", "Trying to! {place} spoiled me honestly.")],
        [
            "Where did {p} go camping with {company}?",
            "Who went camping with {p} at {place}?",
            "Where did {p} spend the camping weekend?",
        ],
        ["When did {p} go camping at {place}?"],
        ["Where has {p} gone camping?"],
        2,
    ),
    FactType(
        "trip",
        "travel",
        "city",
        {
            "city": _p(
                "Lisbon|Kyoto|Montreal|Barcelona|Reykjavik|New Orleans|Mexico City"
                "|Vancouver|Prague|Savannah|Copenhagen|Seoul|Edinburgh|Marrakech|Buenos Aires"
            ),
            "reason": _p(
                "a friend's wedding|a work conference|a family reunion|a food tour"
                "|a long-overdue vacation|a birthday weekend"
            ),
        },
        [
            "I just got back from {city}! Went for {reason} and stayed a few extra days.",
            "So I was in {city} for {reason} last week, the food alone was worth the flight.",
            "[shares a photo of a narrow street at sunset] {city}. Flew out for {reason}.",
            "Quick update: {city} trip for {reason} happened and I'm still jet lagged.",
        ],
        [
            "Ahh I've always wanted to go there! What was the highlight?",
            "Welcome back! How was {reason}?",
            "Did you try the local food?",
        ],
        [
            "Honestly just wandering around with no plan, best way to see a place.",
            "The highlight was a tiny bakery near the hotel, I went every morning.",
            "Travel makes me feel alive, I want to do at least two trips a year.",
        ],
        [("Any photos from {city} you haven't shown me?", "Tons, I'll send more later haha.")],
        [
            "Where did {p} travel for {reason}?",
            "Why did {p} go to {city}?",
            "Which city did {p} visit recently?",
        ],
        ["When did {p} travel to {city}?"],
        ["Which cities has {p} visited?", "What places has {p} traveled to?"],
        2,
    ),
    FactType(
        "book",
        "reading",
        "book",
        {
            "book": _p(
                "The Midnight Library|Where the Crawdads Sing|Educated|Project Hail Mary"
                "|The Overstory|Circe|Klara and the Sun|Pachinko|Born a Crime|The Night Circus"
                "|Atomic Habits|Braiding Sweetgrass|Station Eleven|A Gentleman in Moscow"
                "|Little Fires Everywhere|The Vanishing Half"
            ),
            "verdict": _p(
                "couldn't put it down|cried at the ending|it changed how I think about"
                " things|it was slow at first but so worth it|my new favourite"
            ),
        },
        [
            "I finally finished {book}, {verdict}.",
            "Reading {book} right now on your rec, {verdict}.",
            "[shares a photo of a paperback on a beach towel] {book}, {verdict}.",
            "My book club picked {book} this month and {verdict}.",
        ],
        [
            "Ooh I've heard of that one! Would you recommend it?",
            "Adding it to my list!",
            "What's it about?",
        ],
        [
            "Yes, read it, you'll love it. Reading before bed is my favourite ritual.",
            "It's hard to explain without spoilers, just trust me.",
            "I've been reading way more this year, fewer screens at night.",
        ],
        [("Did you start anything after {book}?", "Not yet, still recovering from {book} haha.")],
        [
            "What did {p} think of {book}?",
            "Which book did {p} finish recently?",
            "What novel is {p} reading?",
        ],
        [],
        ["What books has {p} read?", "Which books has {p} mentioned reading?"],
        3,
    ),
    FactType(
        "volunteer",
        "community",
        "charity",
        {
            "charity": _p(
                "the food bank on Fifth Street|Habitat for Humanity|the animal shelter"
                "|a literacy program for adults|the children's hospital|a beach cleanup crew"
                "|the homeless shelter downtown|a crisis text line|the community garden"
                "|a youth mentoring program|Meals on Wheels"
            ),
            "task": _p(
                "sorting donations|building a porch|reading with kids|serving dinner"
                "|picking up litter|answering calls|planting tomatoes"
            ),
        },
        [
            "Spent Saturday volunteering at {charity}, mostly {task}, tiring but so good.",
            "I started helping out with {charity} a couple of weekends a month, {task} mainly.",
            "[shares a photo of volunteers in matching t-shirts] {charity} crew! We did {task}"
            " all morning.",
            "Did a shift at {charity} yesterday, {task}. Came home exhausted and happy.",
        ],
        [
            "That's really kind of you.",
            "How did you get into that?",
            "I should do something like that too.",
        ],
        [
            "Giving back just feels right, you know? The people there are wonderful.",
            "A friend dragged me along once and I kept going.",
            "It puts my own problems in perspective.",
        ],
        [("Still going to {charity}?", "Yep, whenever I can make the time.")],
        [
            "Where does {p} volunteer?",
            "What did {p} do at {charity}?",
            "What kind of volunteer work has {p} done?",
        ],
        ["When did {p} volunteer at {charity}?"],
        ["What charities has {p} volunteered for?", "Which organisations has {p} helped out?"],
        2,
    ),
    FactType(
        "event",
        "community",
        "event",
        {
            "event": _p(
                "an LGBTQ support group|a pottery workshop|a poetry reading|a charity run"
                "|a mentorship meetup|a grief support circle|a sourdough class|a salsa night"
                "|a town hall meeting|a career fair|a photography walk|a pride parade"
                "|a school fundraiser"
            ),
            "feeling": _p(
                "so inspiring|a little nervous at first|really emotional|super fun"
                "|exactly what I needed"
            ),
        },
        [
            "I went to {event} yesterday and it was {feeling}.",
            "So last Friday I finally went to {event}. {feeling}, honestly.",
            "[shares a photo of a room full of folding chairs] {event}, yesterday. It was"
            " {feeling}.",
            "Remember I mentioned {event}? I went on Sunday, it was {feeling}.",
        ],
        ["I'm really glad you went!", "How did it go?", "Would you go again?"],
        [
            "Everyone was so welcoming, I left feeling lighter.",
            "I was nervous walking in but it got easier quickly.",
            "Definitely going again, it felt like the right place for me.",
        ],
        [("Are you going back to {event}?", "Thinking about it, probably next month.")],
        ["How did {p} feel at {event}?", "What event did {p} attend recently?"],
        ["When did {p} go to {event}?"],
        ["What events has {p} attended?"],
        2,
    ),
    FactType(
        "hobby",
        "creative",
        "hobby",
        {
            "hobby": _p(
                "pottery|watercolor painting|rock climbing|salsa dancing|woodworking"
                "|knitting|photography|aerial yoga|archery|calligraphy|stained glass"
                "|improv comedy"
            ),
            "studio": _p(
                "the rec center|a studio downtown|the community college|a little place"
                " called Clay and Co|the YMCA|a warehouse gym"
            ),
        },
        [
            "I signed up for {hobby} classes at {studio}, first one was Tuesday!",
            "New obsession: {hobby}. I take a class at {studio} every week now.",
            "[shares a photo of a very lopsided first attempt] My {hobby} debut at {studio} haha.",
            "I've been doing {hobby} at {studio} for a month, it's so calming.",
        ],
        [
            "Love that for you! Is it hard?",
            "Okay that's adorable, keep going!",
            "How did you pick that?",
        ],
        [
            "It's hard but in a good way, my brain goes quiet.",
            "I wanted something creative that isn't on a screen.",
            "The teacher is so patient with me, I'm terrible haha.",
        ],
        [("How are the {hobby} classes going?", "Getting better slowly, I'm hooked.")],
        [
            "What class did {p} sign up for at {studio}?",
            "Where does {p} take {hobby} classes?",
            "What new hobby did {p} pick up?",
        ],
        ["When did {p} start {hobby} classes?"],
        ["What hobbies has {p} picked up?"],
        2,
    ),
    FactType(
        "kid",
        "family",
        "child",
        {
            "child": _p("Lily|Max|Ava|Theo|Noah|Mia|Ella|Leo|Zoe|Finn|Nora|Eli|Ruby|Sam"),
            "activity": _p(
                "soccer|ballet|chess club|swimming lessons|the school play|a robotics team"
                "|piano lessons|scouts|gymnastics|a coding camp|the debate club"
            ),
        },
        [
            "{child} just joined {activity} and comes home talking about nothing else.",
            "My little one, {child}, started {activity} this week, I'm so proud.",
            "[shares a photo of a kid grinning in a uniform] {child} at {activity}!",
            "Parenting update: {child} begged to do {activity}, so we signed up.",
        ],
        [
            "Aww, how old is {child} now?",
            "That's so sweet, is {child} enjoying it?",
            "How are the kids otherwise?",
        ],
        [
            "Eight going on eighteen lol. They grow so fast.",
            "Loving it so far, fingers crossed it sticks.",
            "The kids are exhausting but the best thing in my life.",
        ],
        [
            (
                "How is {child} liking {activity}?",
                "Still obsessed, we'll see how long it lasts haha.",
            )
        ],
        [
            "What did {p}'s kid {child} join?",
            "What activity is {child} doing?",
            "What extracurricular did {p}'s child start?",
        ],
        ["When did {child} start {activity}?"],
        ["What activities are {p}'s kids doing?", "What are the names of {p}'s kids?"],
        2,
    ),
    FactType(
        "race",
        "outdoors",
        "race",
        {
            "race": _p(
                "the Bay to Breakers|a 10K in Portland|the city half marathon|a charity 5K"
                "|a sprint triathlon|a trail race in the hills|the Turkey Trot"
            ),
            "time": _p("52 minutes|just under two hours|28 minutes|an hour and ten|1:49"),
        },
        [
            "I ran {race} on Sunday and finished in {time}!",
            "Did {race} this weekend, {time}, legs are dead.",
            "[shares a photo of a finisher medal] {race}, {time}. Never again. Until next year"
            " haha.",
        ],
        ["Whoa congrats!! That's a great time.", "You're a machine.", "How did you train for it?"],
        [
            "Early runs before work for two months, brutal but worth it.",
            "The last mile almost killed me but the crowd was amazing.",
        ],
        [("Recovered from {race} yet?", "Mostly, stairs are still a struggle haha.")],
        ["How long did it take {p} to finish {race}?", "What race did {p} run?"],
        ["When did {p} run {race}?"],
        [],
        1,
    ),
    FactType(
        "cooking",
        "food",
        "dish",
        {
            "dish": _p(
                "lasagna|a lemon tart|pho|banana bread|chicken tikka masala|pierogi"
                "|a three-layer carrot cake|shakshuka|gumbo|homemade dumplings|paella"
            ),
            "occasion": _p(
                "mom's birthday|the neighbourhood potluck|Thanksgiving"
                "|a friend's baby shower|game night|an anniversary dinner"
            ),
        },
        [
            "I made {dish} for {occasion} and there wasn't a crumb left!",
            "Attempted {dish} for {occasion}, it actually turned out good??",
            "[shares a photo of {dish} on a wooden table] For {occasion}. Proud of this one.",
        ],
        [
            "Okay that looks delicious, recipe please!",
            "You're such a good cook.",
            "Save me some next time!",
        ],
        [
            "It's my grandma's recipe, I tweak it every time.",
            "Cooking for people is my love language honestly.",
        ],
        [("Made {dish} again lately?", "Not yet, still recovering from the dishes haha.")],
        ["What did {p} make for {occasion}?", "What did {p} cook recently?"],
        [],
        ["What dishes has {p} cooked?"],
        1,
    ),
]

TYPE = {t.name: t for t in TYPES}

# The job story: an employer, later a move to another one (inference: "still at X?").
JOB_SLOTS = {
    "employer": _p(
        "Brightwave Labs|Harbor Coffee Roasters|Pinecrest Elementary"
        "|Northside Hospital|Greenleaf Bakery|Atlas Logistics|Sunrise Dental"
        "|the city library|Maple Street Vet Clinic|Redwood Credit Union|Bluebird Media"
        "|Cedar Valley High|Lumen Architects|Orchard Grocery"
    ),
    "role": _p(
        "nurse|barista|teacher|graphic designer|software tester|vet assistant"
        "|accountant|librarian|pastry chef|project coordinator|social worker|copywriter"
    ),
}
JOB_SAY = [
    "Work at {employer} is crazy lately, being a {role} there means I'm on my feet all day.",
    "I've been a {role} at {employer} for almost three years now and it's wearing me down.",
    "Long week at {employer}. Some days I love being a {role}, some days not so much.",
]
JOB_CHANGE = [
    "Big news: I quit {employer}! I start as a {role2} at {employer2} on Monday.",
    "So I finally handed in my notice at {employer}. New job at {employer2}, {role2}, wish me"
    " luck!",
    "[shares a photo of a new staff badge] Said goodbye to {employer}, hello {employer2}! I'm"
    " their new {role2}.",
]
JOB_ASK = ["What does {p} do at {employer}?", "Where does {p} work now?", "What is {p}'s new job?"]
JOB_WHEN = ["When did {p} start working at {employer2}?"]
JOB_INFER = ["Is {p} still working at {employer}?", "Did {p} change careers?"]

# Inference questions per group (relevant: the owner's sessions with facts of the group).
INFER = {
    "music": ["Would {p} likely enjoy a music festival?", "Is {p} a musical person?"],
    "outdoors": ["Would {p} enjoy a weekend in a national park?", "Is {p} an outdoorsy person?"],
    "reading": ["Would {p} appreciate a bookstore gift card?", "Is {p} a big reader?"],
    "animals": ["Is {p} an animal lover?", "Would {p} be up for pet-sitting a friend's dog?"],
    "community": [
        "Does {p} care about giving back to the community?",
        "Would {p} sign up to help at a fundraiser?",
    ],
    "creative": ["Would {p} enjoy an arts and crafts workshop?", "Is {p} a creative person?"],
    "family": ["Is {p} busy with family life?", "Are {p}'s kids into after-school activities?"],
    "travel": ["Does {p} like traveling abroad?", "Would {p} enjoy a trip to Europe?"],
    "food": ["Does {p} enjoy cooking for other people?"],
}
