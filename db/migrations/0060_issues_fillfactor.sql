-- Room on each page of issues for the next version of its rows (decision 097): an update whose new
-- version fits on the same page logs only the bytes that changed, and a HOT update needs the room.
ALTER TABLE "issues" SET (fillfactor = 85);
