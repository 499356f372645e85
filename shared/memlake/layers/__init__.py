"""ADR-007 memory layers: threads (raw conversations) -> episodes -> concepts.

tables.py registers the tables and the episode-delete cleanup (it is the feature module in
memlake.features); threads.py holds the thread status machine and messages, concepts.py the
concept hierarchy, links.py the episode<->concept links, episode_versions.py upsert_episode's
write and the revision history, find.py find_episodes' filters.
"""
