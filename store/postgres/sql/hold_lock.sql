-- Cancel's first step: lock the hold.
SELECT state FROM holds WHERE id = $1 FOR UPDATE
