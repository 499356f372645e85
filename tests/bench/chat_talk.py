"""Small talk for tests/bench/conversations.py: greetings, reactions, everyday filler, and
topic chatter (the same topics as the facts, vague or with other specifics: the distractors).

`{other}` is the friend's name; `{x:slot}` draws a random value from that fact slot's pool
(e.g. `{x:petname}`), not one of the conversation's facts unless by chance.
"""

from __future__ import annotations


def _lines(raw: str) -> list[str]:
    return [line.strip() for line in raw.strip().splitlines() if line.strip()]


OPEN = _lines("""
Hey {other}! Long time no talk, how have you been?
Hi {other}, how's your week going so far?
Heyy! Sorry I went quiet, things have been hectic.
Morning {other}! Finally have a minute to catch up.
Hey you! I was just thinking about you.
{other}!! I have so much to tell you.
Hi! Hope the weekend treated you well.
Hey {other}, how are things on your end?
Hello hello! Got your message, sorry for the late reply.
Happy Friday {other}! How's life?
Hey, it's been a minute! What's new?
Hi {other}, did you survive the week?
""")

GREET_BACK = _lines("""
Hey! I'm good, busy but good. You?
Hi! Ugh, what a week, but I'm hanging in there.
Heyy, no worries at all! Things are okay here, just tired.
So good to hear from you! All good here mostly.
Haha same, it's been chaos. I'm alright though!
I'm doing well thanks! Just had coffee so I'm human again.
Hey! Honestly pretty good, the weather finally turned.
Not bad, not bad. Been meaning to text you too!
""")

CLOSE = _lines("""
Okay I have to run, talk soon!
Gotta go start dinner, catch you later!
Let's catch up again this weekend?
I need to get some sleep haha, bye for now!
This was nice, we should talk more often.
Alright, take care of yourself {other}!
Ok the kids are calling me, talk later!
Gotta jump on a call, bye!!
""")

CLOSE_BACK = _lines("""
Bye! Take care!
Talk soon, have a good night!
Yes definitely, miss you!
Haha go go, later!
Sounds good, good luck with everything!
Take care {other}!
Night night!
""")

REACT = _lines("""
Haha that's awesome!
No way, really?
Oh wow, that's amazing.
Ugh, I'm sorry, that sounds rough.
That's so good to hear.
Lol I can totally picture that.
Yesss, love that for you!
Wait, seriously? Tell me more.
Oh man, been there.
That's wild haha.
Aww, that's really sweet.
Honestly, same.
I'm so happy for you!
Hmm, that makes sense.
Oof, that sounds exhausting.
You deserve it!
Haha no way, classic.
Good for you, seriously.
That's a lot, hope you're doing okay.
Okay that made me laugh.
""")

ASK = _lines("""
How are the kids?
How's work treating you?
What have you been up to this week?
How's your family doing?
Any plans for the weekend?
Did you get any rest at all?
How are you feeling about everything?
What else is new with you?
How's the house stuff going?
Have you been sleeping better?
""")

FILLER = _lines("""
Work has been nonstop, I barely had time to breathe this week.
The weather here has been so weird, sunny in the morning and pouring by lunch.
I've been trying to drink less coffee but it's not going great haha.
We binged a whole season of some baking show this weekend, no regrets.
My phone screen cracked again, I swear I'm cursed.
Traffic this morning was a nightmare, took me an hour to get anywhere.
I finally cleaned out the garage, found stuff from like ten years ago.
Honestly I just want a nap and a quiet weekend.
I've been going on evening walks, it really helps me clear my head.
We tried that new taco place near the park, so good.
Our neighbour is renovating and the drilling starts at 7am every day.
My sister called last night, we talked for two hours straight.
I'm trying to be better about meal prep, Sunday is now prep day.
The kids had a snow day so the house was total chaos.
I got a new plant for the kitchen, trying not to kill this one.
I've been journaling a bit before bed, it's nice.
Had a dentist appointment today, not the highlight of my week.
I keep meaning to call my grandma more often.
Spent the whole Saturday doing laundry and errands, very glamorous.
I started waking up earlier to get some quiet time, it's been nice.
We're thinking of redoing the backyard this summer.
Found an old photo album at my parents' place, so many memories.
I've been stress baking again haha.
Our internet went out for two days, I realised how addicted I am.
Been trying to stretch every morning, my back thanks me.
I'm so behind on emails it's not even funny.
My car needs new tires, adulting is expensive.
We had friends over for dinner, it was loud and perfect.
Life has been a lot lately but I'm trying to take it one day at a time.
I made a playlist for the drive to work, it's mostly 2000s pop.
""")

# Topic chatter: the fact topics again, vague or with other specifics (distractors).
CHATTER = {
    "animals": _lines("""
My cousin just got a {x:species} and sends me pictures every hour.
Animals make everything better, I swear.
There's a {x:species} in our street that sits on the fence and judges everyone.
I keep looking at shelter websites, I'm not ready for a pet yet though.
Did I tell you my parents' old dog turned fourteen?
"""),
    "music": _lines("""
I had the radio on the whole drive and sang along like an idiot.
My coworker won't stop talking about {x:band}, I don't get the hype.
I always wanted to learn an instrument, maybe one day.
There's a music festival next summer I keep thinking about.
I've had the same song stuck in my head for three days.
"""),
    "outdoors": _lines("""
I need to get outside more, I've been stuck at my desk for weeks.
My brother wants me to do a hike with him but I'm so out of shape haha.
Someone at work just came back from {x:place} and won't shut up about it.
We went for a walk by the river on Sunday, the leaves are turning.
I bought hiking boots two years ago and wore them once lol.
"""),
    "travel": _lines("""
I really need a vacation, even a weekend somewhere would do.
My friend is moving to {x:city} for a year, so jealous.
Flights are so expensive right now, it's ridiculous.
I've been looking at pictures of {x:city} and daydreaming.
Packing is the worst part of any trip for me.
"""),
    "reading": _lines("""
I keep starting books and not finishing them, it's a problem.
My mom lent me {x:book} but I haven't opened it yet.
I've been listening to audiobooks on my commute.
Do you have any good book recommendations? I'm in a slump.
The library near us just reopened, it's beautiful inside.
"""),
    "community": _lines("""
Our neighbourhood is organising a cleanup next month, might join.
There was a fundraiser at the school, we bought way too many raffle tickets.
I saw a flyer for {x:event} at the coffee shop.
I really admire people who volunteer every week.
Our town has been doing a lot of community events lately.
"""),
    "creative": _lines("""
I tried drawing again the other day, very rusty.
My friend is doing {x:hobby} now and her stuff is so good.
I want a hobby that doesn't involve my phone.
Saw an exhibit at the art museum, really moving stuff.
I bought a craft kit ages ago and it's still in the box haha.
"""),
    "family": _lines("""
The kids are growing up way too fast.
Family dinner on Sunday was chaotic as always.
My niece is starting {x:activity}, she's so excited.
School pickup is the most stressful part of my day.
My parents are visiting next month, need to clean the guest room.
"""),
    "food": _lines("""
I've been craving {x:dish} all week.
We ordered takeout three nights in a row, oops.
I want to get better at cooking but I never have time.
Tried a new recipe and it was a total disaster haha.
"""),
    "career": _lines("""
My manager keeps scheduling meetings at 5pm, it's driving me nuts.
I've been wondering if I'm in the right job honestly.
A friend just switched careers completely, it's so brave.
Payday can't come soon enough.
We had a team lunch today, nice change from the usual.
"""),
}

PHOTOS = _lines("""
a sunset over the lake
a cup of coffee on a windowsill
a messy kitchen counter covered in flour
a rainy street from a car window
a plate of tacos
a backyard with fairy lights
a dog sleeping on a couch
a stack of board games
a view of the mountains from a trail
a birthday cake with candles
a pile of laundry on a chair
a kid's crayon drawing on the fridge
""")
